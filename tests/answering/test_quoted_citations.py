"""The citation of a block merged from a PDF's pages names the page and section its quote comes
from, the same through every path that answers: /ask, /ask/stream, a conversation (answered and
stored), /v1/chat/completions, the trace (which records the chunk holding the quote) and the
replay of that trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from answering.quote_places import PLACE_FIELDS, QUOTE_FIELDS
from answering.replay import context_replay, trace_report
from knowledge.models import Chunk
from tests.answering.battery_manual import ANSWER, PAGES, QUESTION, SAFETY, manual_write
from tests.answering.stub_openai import StubOpenAI
from tests.api.http import openai, post, sse_events


@pytest.fixture
def manual(db, tmp_path) -> Path:
    """The battery manual (retrieval ranks page 3 first; its three chunks make one block)."""
    manual_write(tmp_path / "vault")
    return tmp_path / "vault"


@pytest.fixture
def stub(config_override):
    with StubOpenAI(behaviour="json", answer=ANSWER, deltas=[ANSWER[:20], ANSWER[20:]]) as server:
        openai(config_override, server, llm_timeout_seconds=5.0)
        yield server


def placed(citation: dict) -> dict:
    """The fields a quote decides."""
    return {name: citation[name] for name in (*PLACE_FIELDS, *QUOTE_FIELDS)}


def test_every_path_names_the_page_and_section_of_the_quote(client, manual, stub):
    body = json.loads(post(client, "/ask", {"question": QUESTION, "top_k": 5}).content)
    assert body["mode"] == "rag"
    cited = body["citations"][0]
    # The block is cited by its best chunk, page 3; its quote is on page 1.
    assert cited["chunk_index"] == 2, "the block's best chunk must not hold the quote"
    safety = Chunk.objects.get(relative_path="battery.pdf", chunk_index=0)
    assert (cited["page_start"], cited["page_end"]) == (1, 1)
    assert (cited["heading"], cited["heading_path"]) == ("Safety", ["Safety"])
    assert cited["quote"] == SAFETY and cited["quote_chunk_index"] == 0
    assert safety.content[cited["quote_chunk_start"]:cited["quote_chunk_end"]] == SAFETY

    stub.behaviour = "sse"
    events = dict(sse_events(post(client, "/ask/stream", {"question": QUESTION, "top_k": 5})))
    assert events["citations"]["citations"] == body["citations"]
    # Sent before the answer, the `retrieval` event names the best chunk's page.
    assert events["retrieval"]["citations"][0]["page_start"] == 3
    stub.behaviour = "json"

    conversation = json.loads(post(client, "/conversations", {"question": QUESTION,
                                                              "top_k": 5}).content)
    assert placed(conversation["answer"]["citations"][0]) == placed(cited)
    stored = json.loads(client.get(f"/conversations/{conversation['id']}").content)
    assert placed(stored["messages"][1]["citations"][0]) == placed(cited)

    completion = json.loads(post(client, "/v1/chat/completions", {
        "model": "local-rag", "messages": [{"role": "user", "content": QUESTION}]}).content)
    assert placed(completion["citations"][0]) == placed(cited)
    sources = completion["choices"][0]["message"]["content"].split("\n\nSources:\n")[1]
    assert sources.splitlines()[0] == "- [1] battery.pdf › Safety, p. 1"


def test_the_trace_records_the_chunk_holding_the_quote_and_its_replay_gives_the_same(
        client, manual, stub, capsys):
    from django.core.management import call_command

    body = json.loads(post(client, "/ask", {"question": QUESTION, "top_k": 5}).content)
    trace = trace_report(trace_id=body["trace_id"])["trace"]
    assert trace["answer"] is None  # RAG_TRACE_TEXT is off: the offsets place the quote
    safety = Chunk.objects.get(relative_path="battery.pdf", chunk_index=0)
    entry = trace["citations"][0]
    cited = body["citations"][0]
    assert (entry["quote_chunk_id"], entry["quote_chunk_index"]) == (safety.pk, 0)
    assert (entry["quote_start"], entry["quote_end"], entry["quote_support"]) == (
        cited["quote_start"], cited["quote_end"], cited["quote_support"])
    assert entry["chunk_id"] != safety.pk  # the best chunk is another

    replay = context_replay(trace=trace)
    assert replay.unchanged
    assert replay.blocks[0].citation == {name: value for name, value in cited.items()
                                         if name != "knowledge_base"}

    call_command("traces", "show", body["trace_id"], "--replay")
    out = capsys.readouterr().out
    assert f"quote in chunk {safety.pk}" in out
    assert f"quote (chunk 0, Safety, p. 1): {SAFETY}" in out


@pytest.mark.parametrize("trace_text", [True, False])
def test_a_changed_blocks_quote_is_found_again_only_in_a_kept_answer(
        client, manual, stub, config_override, trace_text):
    config_override(rag_trace_text=trace_text)
    body = json.loads(post(client, "/ask", {"question": QUESTION, "top_k": 5}).content)
    manual_write(manual, [SAFETY, "The warranty now covers the device for three years.",
                          PAGES[2]])
    block = context_replay(trace=trace_report(trace_id=body["trace_id"])["trace"]).blocks[0]
    assert block.status == "changed" and block.citation is not None
    if trace_text:
        # The quote's page did not change: the answer's sentence finds it there again.
        assert placed(block.citation) == placed(body["citations"][0])
    else:
        assert block.citation["quote"] is None and block.citation["page_start"] == 3
