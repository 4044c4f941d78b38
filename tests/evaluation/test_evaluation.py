"""Calibration of the fake provider on the sample vault, and the evaluation report."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from access.callers import scope_all
from answering.refusal import signals_grounded
from core.config import get_config
from core.errors import InvalidRequest
from evaluation.ablation import ablation_run
from evaluation.questions import (
    Question,
    evaluate,
    evaluation_summary,
    latency_percentile,
    ndcg_at_10,
    page_hit_rank,
    question_score,
    questions_load,
    questions_parse,
)
from retrieval.services import search
from retrieval.types import RetrievalRequest, SearchHit, SearchOutcome
from tests.harness import ROOT

QUESTIONS = ROOT / "eval" / "questions.yaml"
ESCALATION = "policies/Support Escalation Policy.md"
REPORT = "reports/drilling.pdf"


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
    report = evaluate(scope=scope_all(), questions=questions_load(path=QUESTIONS), top_k=5,
                      config=config)
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


def test_signals_rule_passes_the_questions_and_reports_its_decisions(sample_index,
                                                                     config_override):
    config = config_override(rag_refusal="signals")
    report = evaluate(scope=scope_all(), questions=questions_load(path=QUESTIONS), top_k=5,
                      config=config)
    summary = report["summary"]
    assert report["refusal"] == "signals" and summary["failed"] == []
    assert summary["no_answer_precision"] == summary["no_answer_recall"] == 1.0
    for row in report["questions"]:
        refusal = row["refusal"]
        assert refusal["rule"] == "signals"
        assert refusal["grounded"] == (row["mode"] == "rag")
        assert refusal["grounded"] == signals_grounded(
            probability=refusal["probability"], top=refusal["signals"]["top"],
            threshold=config.threshold)


def test_failed_expectation_is_reported(sample_index, tmp_path: Path):
    path = tmp_path / "q.yaml"
    path.write_text("questions:\n  - id: w1\n    question: 客户 P1 工单应该怎么升级？\n"
                    "    expected_sources: [sales/Competitive Positioning.md]\n"
                    "    expected_mode: no_answer\n", encoding="utf-8")
    report = evaluate(scope=scope_all(), questions=questions_load(path=path), top_k=5,
                      config=get_config())
    assert report["summary"]["failed"] == ["w1"]
    assert report["questions"][0]["mode"] == "rag"


def test_malformed_questions_file_is_bad_input(tmp_path: Path):
    path = tmp_path / "q.yaml"
    path.write_text("questions: []\n")
    with pytest.raises(InvalidRequest):
        questions_load(path=path)
    with pytest.raises(InvalidRequest, match="not found"):
        questions_load(path=tmp_path / "missing.yaml")


# ---- expected_pages and page hits -----------------------------------------------------------

def hit(source: str, page_start: int | None, page_end: int | None,
        score: float = 0.5) -> SearchHit:
    return SearchHit(content="…", source=source, relative_path=source, heading_path=[],
                     heading="", score=score, chunk_index=0, document_id=1,
                     page_start=page_start, page_end=page_end)


def paged_question(pages: list[int], sources: tuple[str, ...] = (REPORT,)) -> Question:
    return Question(id="p1", question="ZK-1207 的 Au 品位？", expected_sources=list(sources),
                    expected_mode="rag", expected_pages=pages)


def score(question: Question, *hits: SearchHit):
    return question_score(question=question, threshold=0.2,
                          outcome=SearchOutcome(confidence=hits[0].score, results=list(hits)))


def test_expected_pages_are_loaded_and_optional(tmp_path: Path):
    path = tmp_path / "q.yaml"
    path.write_text("questions:\n"
                    "  - id: a\n    question: x\n    expected_sources: [r.pdf]\n"
                    "    expected_pages: [3, 4]\n    expected_mode: rag\n"
                    "  - id: b\n    question: y\n    expected_sources: [n.md]\n"
                    "    expected_mode: rag\n", encoding="utf-8")
    paged, plain = questions_load(path=path)
    assert paged.expected_pages == [3, 4]
    assert plain.expected_pages == []


@pytest.mark.parametrize("extra", [
    "    expected_pages: [0]\n    expected_sources: [r.pdf]\n    expected_mode: rag\n",
    "    expected_pages: [two]\n    expected_sources: [r.pdf]\n    expected_mode: rag\n",
    "    expected_pages: [1]\n    expected_sources: []\n    expected_mode: rag\n",
    "    expected_pages: [1]\n    expected_sources: [r.pdf]\n    expected_mode: no_answer\n",
])
def test_expected_pages_must_be_pages_of_an_expected_source(tmp_path: Path, extra: str):
    path = tmp_path / "q.yaml"
    path.write_text("questions:\n  - id: a\n    question: x\n" + extra, encoding="utf-8")
    with pytest.raises(InvalidRequest, match="expected_pages"):
        questions_load(path=path)


# ---- answer_contains -----------------------------------------------------------------------


def test_answer_spans_are_loaded_optional_and_copied_from_the_vault():
    questions = questions_load(path=QUESTIONS)
    answerable = [q for q in questions if q.expected_mode == "rag"]
    assert all(q.answer_contains for q in answerable)
    assert all(q.answer_contains == [] for q in questions if q.expected_mode == "no_answer")
    vault = "".join(path.read_text(encoding="utf-8")
                    for path in (ROOT / "samples" / "acme-vault").rglob("*.md"))
    unmarked = vault.replace("*", "").replace("`", "")
    for question in answerable:
        for span in question.answer_contains:
            assert span in unmarked, (question.id, span)


@pytest.mark.parametrize("spans", ["just a string", "[1, 2]", "['']", "[" + "x, " * 11 + "]",
                                   "['" + "x" * 201 + "']"])
def test_answer_spans_must_be_a_short_list_of_strings(tmp_path: Path, spans: str):
    path = tmp_path / "q.yaml"
    path.write_text("questions:\n  - id: a\n    question: x\n    expected_sources: [n.md]\n"
                    f"    expected_mode: rag\n    answer_contains: {spans}\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match="answer_contains must be a list"):
        questions_load(path=path)


def test_answer_spans_need_an_answerable_question(tmp_path: Path):
    path = tmp_path / "q.yaml"
    path.write_text("questions:\n  - id: a\n    question: x\n    expected_mode: no_answer\n"
                    "    answer_contains: [Paris]\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match="answer_contains needs expected_mode rag"):
        questions_load(path=path)


def test_page_hit_when_the_span_contains_an_expected_page():
    result = score(paged_question([3]), hit(REPORT, 1, 2), hit(REPORT, 2, 4), hit(REPORT, 3, 3))
    assert result.page_hit_rank == 2
    assert result.hit_rank == 1 and result.expected_pages == [3]


def test_a_single_page_chunk_on_the_expected_page_is_a_page_hit():
    assert score(paged_question([5]), hit(REPORT, 5, 5)).page_hit_rank == 1
    assert page_hit_rank(hits=[hit(REPORT, 5, None)], sources=[REPORT], pages=[5]) == 1


def test_wrong_page_is_not_a_page_hit_but_still_a_source_hit():
    result = score(paged_question([3]), hit(REPORT, 1, 2), hit(REPORT, 4, 5))
    assert result.page_hit_rank is None
    assert result.hit_rank == 1 and result.passed


def test_right_page_of_another_file_is_not_a_page_hit():
    result = score(paged_question([3]), hit("reports/other.pdf", 3, 3), hit(ESCALATION, None, None))
    assert result.page_hit_rank is None and result.hit_rank is None


def test_chunks_without_pages_never_page_hit():
    assert score(paged_question([1]), hit(REPORT, None, None)).page_hit_rank is None


def test_question_without_expected_pages_has_no_page_rank():
    result = score(paged_question([]), hit(REPORT, 1, 1))
    assert result.page_hit_rank is None and result.hit_rank == 1


def test_summary_page_hit_at_1_and_at_k_count_only_questions_with_pages():
    results = [
        score(paged_question([2]), hit(REPORT, 2, 2)),                      # page hit at 1
        score(paged_question([2]), hit(REPORT, 1, 1), hit(REPORT, 2, 3)),   # page hit at 2
        score(paged_question([2]), hit(REPORT, 7, 7)),                      # page miss
        score(paged_question([]), hit(REPORT, 9, 9)),                       # not page-scored
    ]
    summary = evaluation_summary(results=results, threshold=0.2, top_k=5)
    assert summary["page_questions"] == 3
    assert summary["page_hit_at_1"] == pytest.approx(1 / 3, abs=1e-4)
    assert summary["page_hit_at_k"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["hit_at_1"] == 1.0 and summary["failed"] == []
    assert evaluation_summary(results=results[:2], threshold=0.2, top_k=1)["page_hit_at_k"] == 0.5


def test_summary_without_page_questions_reports_no_page_score():
    summary = evaluation_summary(results=[score(paged_question([]), hit(REPORT, 1, 1))],
                                 threshold=0.2, top_k=5)
    assert summary["page_questions"] == 0
    assert summary["page_hit_at_1"] is None and summary["page_hit_at_k"] is None


def _pages_set(relative_path: str, page_start: int, page_end: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE chunks SET page_start = %s, page_end = %s "
                       "WHERE relative_path = %s", [page_start, page_end, relative_path])
        assert cursor.rowcount > 0


def _paged_questions_file(tmp_path: Path) -> Path:
    path = tmp_path / "paged.yaml"
    path.write_text("questions:\n"
                    "  - id: right_page\n    question: 客户提交的 P1 工单如何升级？\n"
                    f"    expected_sources: [{ESCALATION}]\n    expected_pages: [3]\n"
                    "    expected_mode: rag\n"
                    "  - id: wrong_page\n    question: 客户提交的 P1 工单如何升级？\n"
                    f"    expected_sources: [{ESCALATION}]\n    expected_pages: [9]\n"
                    "    expected_mode: rag\n"
                    "  - id: off_topic\n    question: Will it be sunny in Paris tomorrow?\n"
                    "    expected_sources: []\n    expected_mode: no_answer\n",
                    encoding="utf-8")
    return path


def test_eval_reports_page_hits_from_indexed_page_spans(sample_index, tmp_path: Path):
    _pages_set(ESCALATION, 2, 4)
    report = evaluate(scope=scope_all(),
                      questions=questions_load(path=_paged_questions_file(tmp_path)), top_k=5,
                      config=get_config())
    rows = {row["id"]: row for row in report["questions"]}
    assert rows["right_page"]["page_hit_rank"] == rows["right_page"]["hit_rank"] == 1
    assert rows["wrong_page"]["page_hit_rank"] is None and rows["wrong_page"]["hit_rank"] == 1
    assert rows["off_topic"]["page_hit_rank"] is None and rows["off_topic"]["expected_pages"] == []
    summary = report["summary"]
    assert (summary["page_questions"], summary["page_hit_at_1"], summary["page_hit_at_k"]) == (
        2, 0.5, 0.5)
    assert summary["failed"] == []


def test_eval_command_prints_page_column_and_scores_only_for_paged_questions(sample_index,
                                                                            tmp_path: Path):
    def run(*args: str) -> str:
        out = io.StringIO()
        call_command("eval", *args, stdout=out)
        return out.getvalue()

    def header(text: str) -> list[str]:
        return next(line for line in text.splitlines() if line.startswith("id ")).split()

    paged = run("--questions", str(_paged_questions_file(tmp_path)))
    assert header(paged) == ["id", "expected", "mode", "conf", "rank", "page", "question"]
    assert "page_hit_at_1" in paged and "page_hit_at_k" in paged
    plain = run("--questions", str(QUESTIONS))
    assert header(plain) == ["id", "expected", "mode", "conf", "rank", "question"]
    assert "page_hit" not in plain
    report = json.loads(run("--questions", str(QUESTIONS), "--json"))
    assert report["summary"]["page_questions"] == 0
    assert all(row["page_hit_rank"] is None for row in report["questions"])


def test_geology_sample_finds_every_expected_file_and_page(db):
    """The second sample end to end: its PDFs, scan, DOCX and TXT ingested for real, and every
    question of eval/geo-questions.yaml finds its file, and its page where it names one, in
    the top 5 (the scanned pages only with the OCR extra)."""
    from knowledge.ingest import IngestRequest, vault_ingest
    from parsing.formats import ocr

    result = vault_ingest(IngestRequest(vault_path=ROOT / "samples" / "geo-kb", prepare_workers=0),
                          config=get_config())
    assert result.files_rejected == 0
    questions = questions_load(path=ROOT / "eval" / "geo-questions.yaml")
    if not ocr.ocr_available():
        questions = [question for question in questions if question.kind != "scan"]
    report = evaluate(scope=scope_all(), questions=questions, top_k=5, config=get_config())
    summary = report["summary"]
    in_domain = [entry for entry in report["questions"] if entry["expected_mode"] == "rag"]
    assert [entry["id"] for entry in in_domain if entry["hit_rank"] is None] == []
    assert summary["hit_at_5"] == 1.0 and summary["page_hit_at_k"] == 1.0
    assert summary["page_questions"] >= 12
    refused = [entry["mode"] for entry in report["questions"]
               if entry["expected_mode"] == "no_answer"]
    assert refused and set(refused) == {"no_answer"}


# ---- questions_parse, nDCG@10 and latency ---------------------------------------------------

def test_questions_parse_reads_the_same_questions_as_the_file():
    text = QUESTIONS.read_text(encoding="utf-8")
    assert questions_parse(text, source="upload.yaml") == questions_load(path=QUESTIONS)


def test_questions_parse_names_every_invalid_question():
    text = ("questions:\n"
            "  - id: ok\n    question: fine\n    expected_sources: [a.md]\n"
            "    expected_mode: rag\n"
            "  - id: no_mode\n    question: x\n"
            "  - id: bad_mode\n    question: y\n    expected_mode: maybe\n"
            "  - just a string\n"
            "  - question: which id?\n    expected_mode: no_answer\n"
            "  - id: one_source\n    question: z\n    expected_sources: a.md\n"
            "    expected_mode: rag\n")
    with pytest.raises(InvalidRequest) as caught:
        questions_parse(text, source="upload.yaml")
    errors = caught.value.details["errors"]
    assert errors == [
        "question no_mode (#2) lacks a field: 'expected_mode'",
        "question bad_mode (#3): expected_mode must be rag or no_answer",
        "question #4 in upload.yaml is not a mapping of fields",
        "question #5 in upload.yaml lacks a field: 'id'",
        "question one_source (#6): expected_sources must be a list of file paths",
    ]
    assert caught.value.message.startswith("5 questions in upload.yaml are invalid")


@pytest.mark.parametrize(("text", "problem"), [
    ("questions: [", "is not valid YAML"),
    ("questions: []\n", "non-empty `questions:` list"),
    ("- id: a\n", "non-empty `questions:` list"),
    ("questions:\n  - id: a\n    question: '  '\n    expected_mode: rag\n", "lacks a field"),
])
def test_questions_parse_refuses_what_is_not_a_question_list(text: str, problem: str):
    with pytest.raises(InvalidRequest, match=problem) as caught:
        questions_parse(text, source="pasted")
    assert len(caught.value.details["errors"]) == 1


def test_ndcg_at_10_on_a_hand_made_ranking():
    # Relevant at ranks 2 and 4 (the second chunk of a.md counts once): DCG = 1/log2(3) +
    # 1/log2(5); ideal, both expected sources on top: 1 + 1/log2(3).
    value = ndcg_at_10(sources=["x.md", "a.md", "a.md", "b.md"], expected=["a.md", "b.md"])
    assert value == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert value == pytest.approx(0.6509, abs=1e-4)
    assert ndcg_at_10(sources=["a.md", "b.md"], expected=["b.md", "a.md"]) == 1.0
    assert ndcg_at_10(sources=["x.md", "y.md"], expected=["a.md"]) == 0.0
    assert ndcg_at_10(sources=["x.md"] * 10 + ["a.md"], expected=["a.md"]) == 0.0  # rank 11


def test_ndcg_at_10_caps_the_ideal_at_ten_sources():
    expected = [f"n{number}.md" for number in range(12)]
    assert ndcg_at_10(sources=expected[:10], expected=expected) == pytest.approx(1.0)
    assert ndcg_at_10(sources=[], expected=[]) == 0.0


def test_latency_percentiles_are_nearest_rank():
    latencies = [40.0, 10.0, 30.0, 20.0]
    assert latency_percentile(latencies, share=0.5) == 20.0
    assert latency_percentile(latencies, share=0.95) == 40.0
    assert latency_percentile([7.25], share=0.95) == 7.2  # rounded to 0.1 ms
    assert latency_percentile([], share=0.5) is None


def test_report_adds_ndcg_and_latency_without_changing_the_other_fields(sample_index):
    config = get_config()
    questions = questions_load(path=QUESTIONS)
    report = evaluate(scope=scope_all(), questions=questions, top_k=5, config=config)
    rows = report["questions"]
    assert report["retrieval"] == config.rag_retrieval
    assert all(row["latency_ms"] > 0 for row in rows)
    assert all((row["ndcg_at_10"] is None) == (row["expected_mode"] == "no_answer")
               for row in rows)
    summary = report["summary"]
    assert 0 < summary["ndcg_at_10"] <= 1
    assert 0 < summary["latency_p50_ms"] <= summary["latency_p95_ms"]
    # The top_k search is unchanged by the deeper one nDCG@10 needs: the same ranks and
    # confidences as scoring each question by itself.
    for question, row in zip(questions, rows):
        alone = question_score(question=question, threshold=config.threshold, outcome=search(
            RetrievalRequest(query=question.question, scope=scope_all(), top_k=5),
            config=config))
        assert (row["hit_rank"], row["confidence"], row["mode"]) == (
            alone.hit_rank, alone.confidence, alone.mode)
    # The same nDCG@10 as `rag eval --ablation` reports for this configuration.
    ablation = ablation_run(questions=questions, config=config, scope=scope_all())
    same = next(row for row in ablation["rows"] if (row["retrieval"], row["rerank"]) == (
        config.rag_retrieval, config.rag_rerank))
    assert summary["ndcg_at_10"] == same["ndcg_at_10"]


def test_progress_is_reported_before_each_question(sample_index):
    calls = []
    questions = questions_load(path=QUESTIONS)[:3]
    evaluate(scope=scope_all(), questions=questions, top_k=5, config=get_config(),
             progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 3), (1, 3), (2, 3)]
