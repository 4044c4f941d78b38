"""Calibration of the fake provider on the sample vault, and the evaluation report."""

from __future__ import annotations

from pathlib import Path

import pytest

from answering.evaluation import evaluate, questions_load
from core.config import get_config
from core.errors import InvalidRequest
from tests.harness import ROOT

QUESTIONS = ROOT / "eval" / "questions.yaml"


def test_questions_file_covers_the_demo_and_out_of_domain_cases():
    questions = questions_load(path=QUESTIONS)
    assert len(questions) >= 12
    assert sum(q.expected_mode == "no_answer" for q in questions) >= 3
    sources = {source for q in questions for source in q.expected_sources}
    assert {"policies/Support Escalation Policy.md", "runbooks/API Latency Runbook.md",
            "policies/Data Handling Policy.md", "sales/Competitive Positioning.md"} <= sources
    assert any("导出" in q.question for q in questions)
    assert any(q.question.isascii() for q in questions if q.expected_mode == "rag")


def test_fake_provider_calibration_at_default_threshold(sample_index):
    config = get_config()
    assert config.threshold == 0.20
    report = evaluate(questions=questions_load(path=QUESTIONS), top_k=5, config=config)
    summary = report["summary"]
    print(f"\nfake-lexical-v1 calibration: lowest in-domain confidence "
          f"{summary['lowest_in_domain_confidence']:.4f}, highest out-of-domain "
          f"{summary['highest_out_of_domain_confidence']:.4f}, margin "
          f"{summary['calibration_margin']:.4f}")
    assert summary["failed"] == []
    assert summary["lowest_in_domain_confidence"] >= 0.20
    assert summary["highest_out_of_domain_confidence"] < 0.20
    assert summary["hit_at_5"] == 1.0 and summary["mode_accuracy"] == 1.0
    assert summary["no_answer_precision"] == summary["no_answer_recall"] == 1.0
    low, high = (summary["highest_out_of_domain_confidence"],
                 summary["lowest_in_domain_confidence"])
    assert low < report["thresholds"]["suggested"] < high


def test_failed_expectation_is_reported(sample_index, tmp_path: Path):
    path = tmp_path / "q.yaml"
    path.write_text("questions:\n  - id: w1\n    question: 客户 P1 工单应该怎么升级？\n"
                    "    expected_sources: [sales/Competitive Positioning.md]\n"
                    "    expected_mode: no_answer\n", encoding="utf-8")
    report = evaluate(questions=questions_load(path=path), top_k=5, config=get_config())
    assert report["summary"]["failed"] == ["w1"]
    assert report["questions"][0]["mode"] == "rag"


def test_malformed_questions_file_is_bad_input(tmp_path: Path):
    path = tmp_path / "q.yaml"
    path.write_text("questions: []\n")
    with pytest.raises(InvalidRequest):
        questions_load(path=path)
    with pytest.raises(InvalidRequest, match="not found"):
        questions_load(path=tmp_path / "missing.yaml")
