"""`rag eval --beir`: the BEIR loader, the graded scores, and the report on a generated
collection ingested into a throw-away or a named knowledge base."""

from __future__ import annotations

import json
import math
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from core.config import get_config
from core.errors import InvalidRequest
from evaluation import beir
from evaluation.beir import beir_evaluate, beir_load, document_file_name, ranking_scores
from knowledge.bases import kb_list

DOCUMENTS = {
    "d1": ("Restoring backups", "Restore the nightly backup from the object store before noon."),
    "d2": ("Error codes", "ERR-1042 means the export quota was exceeded; retry after an hour."),
    "d3": ("Vacation policy", "Employees accrue vacation days monthly and carry five over."),
    "d4": ("Deploy runbook", "Deploys go through the staging cluster, then canary, then all."),
    "d5": ("数据导出", "数据导出限制是每天一万条记录，超过后需要审批。"),
    "d6": ("", "Untitled plain text about parking permits for visitors at the office."),
    "d7": ("Heading with # and ---", "# not a heading\n--- not front matter\nbody text"),
}
QUERIES = {"q1": "how do I restore backups", "q2": "ERR-1042", "q3": "vacation days carried over",
           "q4": "数据导出限制", "q5": "parking permit for visitors", "q6": "nothing judged"}
QRELS = [("q1", "d1", 1), ("q2", "d2", 2), ("q3", "d3", 1), ("q4", "d5", 1), ("q5", "d6", 1),
         ("q5", "d4", 0), ("q1", "missing-doc", 1)]


def beir_folder(root: Path, *, qrels=QRELS, corpus_lines: list[str] | None = None) -> Path:
    folder = root / "tiny-beir"
    (folder / "qrels").mkdir(parents=True)
    lines = corpus_lines if corpus_lines is not None else [
        json.dumps({"_id": doc_id, "title": title, "text": text})
        for doc_id, (title, text) in DOCUMENTS.items()]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": query_id, "text": text}) + "\n" for query_id, text in QUERIES.items()),
        encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{s}\n" for q, d, s in qrels), encoding="utf-8")
    return folder


def test_graded_scores_match_hand_computed_values():
    judged = {"a": 2, "b": 1, "c": 1}
    scores = ranking_scores(ranking=["x", "b", "a", "b", "y"], judged=judged)
    dcg = 1 / math.log2(3) + 2 / math.log2(4)  # b at 2, a at 3; the repeated b counts once
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert scores["ndcg_at_10"] == pytest.approx(dcg / ideal)
    assert scores["recall_at_10"] == pytest.approx(2 / 3)
    assert scores["mrr_at_10"] == pytest.approx(1 / 2)
    assert scores["hit_at_1"] == 0.0
    assert ranking_scores(ranking=["a"], judged=judged)["hit_at_1"] == 1.0


def test_loader_keeps_judged_queries_and_counts_judgments_it_cannot_use(tmp_path: Path):
    folder = beir_folder(tmp_path)
    with (folder / "qrels" / "test.tsv").open("a", encoding="utf-8") as qrels:
        qrels.write("\n\n")  # blank lines are skipped, not an error
    collection = beir_load(path=folder, split="test")
    assert sorted(collection.queries) == ["q1", "q2", "q3", "q4", "q5"]  # q6 has no judgment
    assert collection.qrels["q5"] == {"d6": 1}  # the grade-0 judgment is not a relevant one
    assert collection.qrels["q2"] == {"d2": 2}
    assert collection.skipped_judgments == 1  # the missing document
    assert len(collection.documents) == 7


def test_loader_errors_name_the_file_the_line_and_the_splits_there(tmp_path: Path,
                                                                    monkeypatch):
    folder = beir_folder(tmp_path)
    with pytest.raises(InvalidRequest, match=r"qrels/dev\.tsv is missing \(splits here: test\)"):
        beir_load(path=folder, split="dev")
    broken = beir_folder(tmp_path / "broken", corpus_lines=['{"_id": "d1", "text": "ok"}',
                                                            '{"_id": "d2", "text": '])
    with pytest.raises(InvalidRequest, match=r"corpus\.jsonl:2: not a JSON object"):
        beir_load(path=broken, split="test")
    no_id = beir_folder(tmp_path / "no-id", corpus_lines=['{"text": "no id"}'])
    with pytest.raises(InvalidRequest, match=r"corpus\.jsonl:1: no '_id'"):
        beir_load(path=no_id, split="test")
    unjudged = beir_folder(tmp_path / "unjudged", qrels=[("q1", "missing-doc", 1)])
    with pytest.raises(InvalidRequest, match="judges no query"):
        beir_load(path=unjudged, split="test")
    endless = beir_folder(tmp_path / "endless", corpus_lines=[])
    (endless / "corpus.jsonl").write_bytes(b'{"_id": "d1", "text": "' + b"x" * 200 + b'"}')
    monkeypatch.setattr(beir, "MAX_LINE_BYTES", 100)
    with pytest.raises(InvalidRequest, match=r"corpus\.jsonl:1: a line over 100 bytes"):
        beir_load(path=endless, split="test")
    endless_qrels = beir_folder(tmp_path / "endless-qrels", corpus_lines=['{"_id": "d1"}'])
    (endless_qrels / "qrels" / "test.tsv").write_bytes(b"q1\td1\t" + b"1" * 200)
    with pytest.raises(InvalidRequest, match=r"test\.tsv:1: a line over 100 bytes"):
        beir_load(path=endless_qrels, split="test")


def test_document_ids_become_safe_distinct_file_names():
    assert document_file_name("d1", titled=True) == "d1.md"
    assert document_file_name("d1", titled=False) == "d1.txt"
    odd = document_file_name("../a b/c", titled=True)
    assert "/" not in odd and odd != document_file_name("../a_b/c", titled=True)


@pytest.mark.django_db
def test_report_scores_every_row_and_removes_the_throwaway_base(tmp_path: Path):
    report = beir_evaluate(path=beir_folder(tmp_path), split="test", config=get_config())
    rows = {row["row"]: row for row in report["rows"]}
    assert {"lexical", "vector", "hybrid", "default", "hybrid rrf", "hybrid + features",
            "reference bm25"} <= set(rows)
    assert report["queries"] == 5 and report["documents"] == 7 and report["chunks_written"] == 7
    # Stems (`restore` / `restoring`, `carried` / `carry`), the identifier and the Chinese
    # bigrams put every judged document first in the lexical channel.
    assert rows["lexical"]["ndcg_at_10"] == 1.0 and rows["lexical"]["hit_at_1"] == 1.0
    assert rows["hybrid"]["ndcg_at_10"] >= rows["lexical"]["ndcg_at_10"] - 0.005
    assert rows["reference bm25"]["recall_at_100"] == 1.0
    # The default configuration (hybrid, no rerank) is the hybrid row, scored once.
    assert (rows["default"]["retrieval"], rows["default"]["rerank"]) == ("hybrid", "none")
    assert {key: value for key, value in rows["default"].items() if key != "row"} \
        == {key: value for key, value in rows["hybrid"].items() if key != "row"}
    for row in rows.values():
        assert 0.0 <= row["ndcg_at_10"] <= 1.0 and row["latency_p50_ms"] >= 0
    assert report["knowledge_base"] is None
    assert not [base for base in kb_list() if base.slug.startswith("beir-")]
    assert not list((get_config().project_root / ".local" / "beir").glob("beir-tiny-beir-*"))


@pytest.mark.django_db
def test_named_base_is_kept_and_a_second_run_reembeds_nothing(tmp_path: Path):
    folder = beir_folder(tmp_path)
    out = StringIO()
    call_command("eval", beir=str(folder), kb=["tiny"], stdout=out, stderr=StringIO())
    text = out.getvalue()
    assert "tiny-beir (test): 7 documents, 5 judged queries, 7 chunks written" in text
    assert text.count("\n") >= 9 and "reference bm25" in text and "nDCG@10" in text
    again = StringIO()
    call_command("eval", beir=str(folder), kb=["tiny"], json=True, no_reference=True,
                 stdout=again, stderr=StringIO())
    report = json.loads(again.getvalue())
    assert report["knowledge_base"] == "tiny" and report["chunks_written"] == 0
    assert "reference bm25" not in {row["row"] for row in report["rows"]}
    assert [base.documents for base in kb_list(slugs=["tiny"])] == [7]
