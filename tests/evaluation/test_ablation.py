"""`rag eval --ablation`: every retrieval configuration scored on the same questions."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from core.config import get_config
from evaluation.ablation import ablation_rows, config_hash
from evaluation.questions import ndcg_at_10
from tests.harness import ROOT

QUESTIONS = ROOT / "eval" / "retrieval-questions.yaml"


@pytest.mark.parametrize(("sources", "expected", "value"), [
    (["a", "b"], ["a"], 1.0),
    (["b", "a"], ["a"], 1 / 1.5849625007211563),
    (["a", "a", "b"], ["a", "b"], (1 + 1 / 2) / (1 + 1 / 1.5849625007211563)),
    (["x"] * 10 + ["a"], ["a"], 0.0),
])
def test_ndcg_at_10_by_hand(sources, expected, value):
    assert ndcg_at_10(sources=sources, expected=expected) == pytest.approx(value)


def test_rows_include_each_reranker_that_can_run(config_override):
    assert ablation_rows(config=get_config()) == [
        ("vector", "none"), ("lexical", "none"), ("hybrid", "none"), ("hybrid", "features")]
    config = get_config()
    assert config_hash(config=config) != config_hash(
        config=config_override(rag_retrieval="lexical"))


def test_ablation_table_over_the_identifier_questions(sample_index):
    out = io.StringIO()
    call_command("eval", "--questions", str(QUESTIONS), "--ablation", "--json", stdout=out)
    report = json.loads(out.getvalue())
    rows = {(row["retrieval"], row["rerank"]): row for row in report["rows"]}
    assert set(rows) == {("vector", "none"), ("lexical", "none"), ("hybrid", "none"),
                         ("hybrid", "features")}
    vector, hybrid = rows[("vector", "none")], rows[("hybrid", "none")]
    # The targets of the hybrid design, measured on the project's own questions.
    assert hybrid["hit_at_5"] >= vector["hit_at_5"] and hybrid["mrr"] >= vector["mrr"]
    assert hybrid["refusal_recall"] >= vector["refusal_recall"]
    assert len(report["corpus_hash"]) == 12 and len({r["config_hash"] for r in rows.values()}) == 4
