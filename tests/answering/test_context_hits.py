"""The candidates of an answer's context: a deeper search when the per-document cap frees places
of the top_k (answering/context_hits.py)."""

from __future__ import annotations

from access.callers import scope_all
from answering.context import context_build
from answering.context_hits import CONTEXT_SEARCH_DEPTH, context_hits
from core.config import get_config
from embeddings import FakeLexicalEmbedder
from knowledge.ingest import IngestRequest, vault_ingest
from retrieval.services import search
from retrieval.types import RetrievalRequest
from traces.recording import trace_begin, trace_detach, trace_record

EMBEDDER = FakeLexicalEmbedder()
QUESTION = "What is the maintenance schedule of the north shaft dewatering pump?"


def vault_write(folder, *, parts: int) -> None:
    """A long report whose every section speaks of the pump, and a short memo that does too."""
    sections = "\n\n".join(
        f"## Part {n}\n\nThe north shaft dewatering pump maintenance schedule, inspection {n}: "
        f"the dewatering pump of the north shaft is serviced on schedule, round {n}."
        for n in range(1, parts + 1))
    (folder / "report.md").write_text(f"# Pump report\n\n{sections}\n")
    (folder / "memo.md").write_text(
        "# Memo\n\nFrom May the pump contract moves to Hartmann Pumps, who keep the "
        "maintenance schedule of the north shaft.\n")


def test_the_memo_beyond_the_top_k_fills_a_place_the_cap_frees(db, tmp_path):
    vault_write(tmp_path, parts=12)
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())
    config = get_config()
    outcome = search(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=5), config=config,
                     embedder=EMBEDDER)
    assert [hit.source for hit in outcome.results] == ["report.md"] * 5
    deeper = search(RetrievalRequest(query=QUESTION, scope=scope_all(),
                                     top_k=CONTEXT_SEARCH_DEPTH), config=config)
    memo_rank = [hit.source for hit in deeper.results].index("memo.md") + 1
    assert memo_rank > 5
    candidates = context_hits(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=5),
                              outcome=outcome, per_document=3, config=config, embedder=EMBEDDER)
    assert candidates.limit == 5 and candidates.hits == deeper.results
    context = context_build(hits=candidates.hits, token_budget=5000, per_document=3,
                            limit=candidates.limit)
    assert "memo.md" in [citation.source for citation in context.citations]
    # Built from the top_k alone, the report leaves the memo out.
    alone = context_build(hits=outcome.results, token_budget=5000, per_document=3)
    assert {citation.source for citation in alone.citations} == {"report.md"}


def test_a_top_k_the_cap_leaves_whole_is_not_searched_again(db, tmp_path, monkeypatch):
    vault_write(tmp_path, parts=2)
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())
    config = get_config()
    outcome = search(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=3), config=config,
                     embedder=EMBEDDER)
    assert sorted(hit.source for hit in outcome.results) == ["memo.md", "report.md", "report.md"]

    def searched_again(*_: object, **__: object) -> None:
        raise AssertionError("searched again")

    monkeypatch.setattr("answering.context_hits.search", searched_again)
    candidates = context_hits(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=3),
                              outcome=outcome, per_document=3, config=config, embedder=EMBEDDER)
    assert candidates.hits == outcome.results and candidates.limit == 3
    # Fewer results than the top_k: there is nothing deeper to fill a place with.
    assert context_hits(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=5),
                        outcome=outcome, per_document=1, config=config,
                        embedder=EMBEDDER).hits == outcome.results


def test_the_deeper_search_leaves_the_traced_parameters_of_the_answer(db, tmp_path):
    vault_write(tmp_path, parts=12)
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())
    config = get_config()
    trace = trace_begin(operation="ask", channel="test")
    try:
        request = RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=5)
        outcome = search(request, config=config, embedder=EMBEDDER)
        trace_record(trace, outcome.measures)
        stages = set(trace.timings_ms)
        candidates = context_hits(request, outcome=outcome, per_document=3, config=config,
                                  embedder=EMBEDDER)
        trace_record(trace, candidates.deeper)
    finally:
        trace_detach(trace)
    assert trace.parameters["top_k"] == 5
    assert trace.parameters["context_search_depth"] == CONTEXT_SEARCH_DEPTH
    assert set(trace.timings_ms) == stages | {"context_search"}
