"""Reproducible answers: an answer's trace keeps every chunk of every block, and replaying it
(`rag traces show ID --replay`) rebuilds exactly the context the model got, or says which block
changed or is gone since."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from access.callers import scope_all
from answering.api_schemas import ask_body
from answering.prompts import PROMPT_VERSION, QUESTION_HEADER, SOURCES_HEADER
from answering.replay import BEFORE_REPLAY, context_replay, trace_report
from answering.services import AnswerRequest, ask
from core.config import get_config
from knowledge.ingest import IngestRequest, vault_ingest
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.answering.stub_openai import StubOpenAI
from tests.api.http import openai
from traces.recording import trace_record, traced

QUESTION = "Which interval did hole ZK-3307 cut with molybdenite at Dongshan?"

# Two sections of one note that both answer the question (adjacent chunks 0 and 1: one block),
# a third section of it that does not, and another note.
DRILLING = (
    "---\nupdated: 2025-11-02\n---\n# Dongshan drilling\n\n"
    "## Hole ZK-3307 collar\n\nHole ZK-3307 at Dongshan cut molybdenite below the collar.\n\n"
    "## Hole ZK-3307 interval\n\nThe molybdenite interval of hole ZK-3307 at Dongshan runs "
    "from 120 to 135 m.\n\n"
    "## Camp logistics\n\nThe camp kitchen opens at six; trucks leave at seven.\n")
SUMMARY = ("---\nupdated: 2026-01-15\n---\n# Dongshan summary\n\nAt Dongshan, hole ZK-3307 "
           "confirmed molybdenite; see the drilling note for its interval.\n")


@pytest.fixture(autouse=True)
def no_earlier_traces(db):
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM traces")


@pytest.fixture
def vault(db, tmp_path) -> Path:
    folder = tmp_path / "vault"
    folder.mkdir()
    (folder / "drilling.md").write_text(DRILLING, encoding="utf-8")
    (folder / "summary.md").write_text(SUMMARY, encoding="utf-8")
    vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
    return folder


@pytest.fixture
def stub(config_override):
    with StubOpenAI(behaviour="json", answer="From 120 to 135 m [1].") as server:
        openai(config_override, server, llm_timeout_seconds=5.0)
        yield server


def answered(stub: StubOpenAI, *, operation: str = "ask") -> tuple[str, str]:
    """Ask QUESTION under a trace: its id, and the context the model received."""
    with traced(operation=operation, channel="cli") as trace:
        answer = ask(AnswerRequest(question=QUESTION, scope=scope_all(), top_k=3, fallback=False,
                                   trace=trace.ref()), config=get_config())
        trace_record(trace, *answer.measures)
        body = ask_body(answer, trace_id=trace.id)
    assert body["mode"] == "rag"
    user = stub.requests[-1].body["messages"][-1]["content"]
    assert user.startswith(SOURCES_HEADER) and user.endswith(QUESTION_HEADER + QUESTION)
    return trace.id, user[len(SOURCES_HEADER):-len(QUESTION_HEADER + QUESTION)]


def recorded(trace_id: str) -> dict:
    return trace_report(trace_id=trace_id)["trace"]


def show(trace_id: str, *args: str, capsys) -> tuple[int, str]:
    """`rag traces show ID …`: its exit status and what it printed."""
    capsys.readouterr()
    try:
        call_command("traces", "show", trace_id, *args)
        status = 0
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    return status, capsys.readouterr().out


def rewrite(vault: Path, name: str, old: str, new: str) -> None:
    path = vault / name
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())


def test_the_trace_records_every_chunk_of_a_merged_block_in_document_order(vault, stub):
    trace_id, _ = answered(stub)
    trace = recorded(trace_id)
    first = trace["citations"][0]
    assert first["source"] == "drilling.md"
    assert [chunk["chunk_index"] for chunk in first["chunks"]] == [0, 1]
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, content_hash FROM chunks")
        hashes = dict(cursor.fetchall())
    for entry in trace["citations"]:
        assert entry["chunk_id"] in {chunk["chunk_id"] for chunk in entry["chunks"]}
        assert all(hashes[chunk["chunk_id"]] == chunk["content_hash"]
                   for chunk in entry["chunks"])
        assert len(entry["block_hash"]) == 64 and entry["truncated"] is False
    assert trace["prompt_version"] == PROMPT_VERSION
    assert trace["llm_model"] == "openai-compatible/stub-model"
    config = get_config()
    assert (trace["parameters"]["context_token_budget"],
            trace["parameters"]["context_per_document"]) == (
        config.rag_context_token_budget, config.rag_context_per_document)


def test_an_answers_trace_replays_to_exactly_the_context_the_model_got(vault, stub, capsys):
    trace_id, context = answered(stub)
    assert "\n\nThe molybdenite interval" in context  # the merged block: both chunks
    replay = context_replay(trace=recorded(trace_id))
    assert replay.replayable and replay.unchanged
    assert replay.text == context
    assert [block.status for block in replay.blocks] == ["unchanged"] * len(replay.blocks)
    status, out = show(trace_id, "--replay", capsys=capsys)
    assert status == 0
    assert f"context rebuilt from the recorded chunks:\n{context}\n" in out
    assert f"replay: {len(replay.blocks)} blocks, {len(replay.blocks)} unchanged" in out


def test_a_truncated_first_block_replays_cut_the_same_way(vault, stub, config_override):
    openai(config_override, stub, llm_timeout_seconds=5.0, rag_context_token_budget=45)
    trace_id, context = answered(stub)
    trace = recorded(trace_id)
    assert [entry["truncated"] for entry in trace["citations"]] == [True]
    replay = context_replay(trace=trace)
    assert replay.unchanged and replay.text == context and context.endswith("[truncated]")


def test_after_a_reingest_that_changes_a_cited_note_the_replay_names_the_changed_block(
        vault, stub, capsys):
    trace_id, context = answered(stub)
    rewrite(vault, "drilling.md", "from 120 to 135 m", "from 120 to 141 m")
    replay = context_replay(trace=recorded(trace_id))
    first, *others = replay.blocks
    assert first.status == "changed" and first.source == "drilling.md"
    # Chunk 1 is the same text in a new row; chunk 2 is the changed one.
    assert [chunk.status for chunk in first.chunks] == ["unchanged", "changed"]
    assert all(chunk.now_chunk_id != chunk.chunk_id for chunk in first.chunks)
    assert first.changes == [f"chunk {first.chunks[1].chunk_id} changed "
                             f"(now chunk {first.chunks[1].now_chunk_id})"]
    assert "141 m" in replay.text and replay.text != context
    assert others and all(block.status == "unchanged" for block in others)
    status, out = show(trace_id, "--replay", capsys=capsys)
    assert status == 1
    assert "[1] changed   drilling.md: chunk" in out


def test_a_new_date_alone_is_a_changed_header(vault, stub):
    trace_id, _ = answered(stub)
    rewrite(vault, "drilling.md", "updated: 2025-11-02", "updated: 2025-12-24")
    first = context_replay(trace=recorded(trace_id)).blocks[0]
    assert [chunk.status for chunk in first.chunks] == ["unchanged", "unchanged"]
    assert first.status == "changed"
    assert first.changes == ["its header changed (source, heading, pages or date)"]


def test_a_deleted_chunk_is_reported(vault, stub, capsys):
    trace_id, _ = answered(stub)
    trace = recorded(trace_id)
    (gone,) = [entry for entry in trace["citations"] if entry["source"] == "summary.md"]
    (vault / "summary.md").unlink()
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=get_config())
    replay = context_replay(trace=trace)
    blocks = {block.source: block for block in replay.blocks}
    assert blocks["summary.md"].status == "deleted" and blocks["summary.md"].text is None
    assert blocks["summary.md"].changes == [f"chunk {gone['chunk_id']} deleted"]
    assert blocks["drilling.md"].status == "unchanged"
    status, out = show(trace_id, "--replay", "--json", capsys=capsys)
    assert status == 1
    body = json.loads(out)["replay"]
    assert body["unchanged"] is False
    assert {block["source"]: block["status"] for block in body["blocks"]}["summary.md"] == (
        "deleted")


def test_a_trace_from_before_blocks_listed_their_chunks_has_its_chunks_checked(vault, stub):
    trace = recorded(answered(stub)[0])
    trace["citations"] = [{"chunk_id": entry["chunk_id"], "content_hash": entry["content_hash"]}
                          for entry in trace["citations"]]
    trace["citations"][1]["content_hash"] = "another text"
    replay = context_replay(trace=trace)
    assert replay.replayable and replay.reason == BEFORE_REPLAY and replay.text == ""
    assert [block.status for block in replay.blocks] == ["unchanged", "changed"]


def test_a_search_trace_has_nothing_to_replay(vault, capsys):
    with traced(operation="search", channel="cli") as trace:
        trace_record(trace, search(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=5),
                                   config=get_config()).measures)
    status, out = show(trace.id, "--replay", capsys=capsys)
    assert status == 0
    assert "nothing to replay: a search makes no answer" in out
    replay = json.loads(show(trace.id, "--replay", "--json", capsys=capsys)[1])["replay"]
    assert (replay["replayable"], replay["text"], replay["blocks"]) == (False, None, [])


def test_show_prints_what_the_trace_recorded(vault, stub, capsys):
    trace_id, _ = answered(stub)
    status, out = show(trace_id, capsys=capsys)
    assert status == 0
    assert f"trace {trace_id} at " in out
    assert "operation: ask on channel cli, status ok" in out
    assert "caller: -" in out and "knowledge bases: default" in out and "mode: rag" in out
    assert "context_token_budget=" in out and "top_k=3" in out
    assert "timings ms: " in out and "llm_total=" in out
    assert "models: embedding fake/fake-lexical-v1, llm openai-compatible/stub-model" in out
    assert "tokens: prompt " in out and f"prompt version: {PROMPT_VERSION}" in out
    assert "  [1] drilling.md score " in out
    assert "context rebuilt" not in out
    body = json.loads(show(trace_id, "--json", capsys=capsys)[1])
    assert set(body) == {"trace"} and body["trace"]["id"] == trace_id
    assert body["trace"]["citations"] == recorded(trace_id)["citations"]


def test_an_unknown_trace_is_not_found(db, capsys):
    status, _ = show("1b4e28ba-2fa1-11d2-883f-0016d3cca427", capsys=capsys)
    assert status == 2
    assert show("not-a-trace-id", capsys=capsys)[0] == 2
