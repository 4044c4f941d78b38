"""Verified citations: each [n] gets the span of block n its sentence relies on, with offsets
that match the chunk's text exactly, and a marker its block does not support is counted."""

from __future__ import annotations

import json

from answering.quote_places import quote_plain
from answering.quotes import SUPPORT_MIN, citations_verify, quote_find
from knowledge.models import Chunk
from tests.answering.stub_openai import StubOpenAI
from tests.api.http import IN_DOMAIN, INDEX_QUESTION, openai, post, sse_events

BLOCKS = [
    "Atlas CRM exports at most 100,000 rows per CSV file. Larger exports run as a job.",
    "客户提交的 P1 工单按以下时间线升级。值班支持经理在 15 分钟内首次响应。",
]


def test_each_marker_quotes_the_sentence_of_its_block_it_relies_on():
    answer = ("A CSV export holds at most 100,000 rows [1]. "
              "值班支持经理会在 15 分钟内首次响应 [2]。")
    quotes, unsupported = citations_verify(answer=answer, block_texts=BLOCKS)
    assert unsupported == 0
    first, second = quotes
    assert first is not None and second is not None
    assert first.text == "Atlas CRM exports at most 100,000 rows per CSV file."
    assert second.text == "值班支持经理在 15 分钟内首次响应。"
    for quote, text in zip(quotes, BLOCKS, strict=True):
        assert quote is not None and text[quote.start:quote.end] == quote.text
        assert quote.support >= SUPPORT_MIN


def test_a_marker_after_the_full_stop_belongs_to_the_sentence_before_it():
    quotes, unsupported = citations_verify(answer="客户提交的 P1 工单按以下时间线升级。 [2]",
                                           block_texts=BLOCKS)
    assert unsupported == 0 and quotes[0] is None
    assert quotes[1] is not None and quotes[1].text == "客户提交的 P1 工单按以下时间线升级。"


def test_a_sentence_with_the_wrong_number_is_flagged():
    answer = "A CSV export holds at most 100,000 rows [2]."
    quotes, unsupported = citations_verify(answer=answer, block_texts=BLOCKS)
    assert unsupported == 1 and quotes == [None, None]


def test_a_verbatim_quotation_is_found_exactly():
    quote = quote_find(claim='The FAQ says “Larger exports run as a job”.', text=BLOCKS[0])
    assert quote is not None and quote.support == 1.0
    assert BLOCKS[0][quote.start:quote.end] == "Larger exports run as a job"


def test_the_fake_models_answer_is_quoted_from_the_chunks_themselves(client, sample_index):
    body = json.loads(post(client, "/ask", {"question": IN_DOMAIN, "top_k": 10}).content)
    assert body["mode"] == "rag" and body["unsupported_citations"] == 0
    quoted = [citation for citation in body["citations"] if citation["quote"]]
    assert quoted, body
    for citation in quoted:
        # The chunk holding the quote, whose section the citation names, reads as its raw span.
        chunk = Chunk.objects.get(document_id=citation["document_id"],
                                  chunk_index=citation["quote_chunk_index"])
        start, end = citation["quote_chunk_start"], citation["quote_chunk_end"]
        assert chunk.content[start:end] == citation["quote_raw"]
        assert citation["heading_path"] == chunk.heading_path
        assert citation["quote_raw"] in body["answer"]  # the fake quotes first sentences
    events = dict(sse_events(post(client, "/ask/stream", {"question": IN_DOMAIN, "top_k": 10})))
    assert events["citations"]["citations"] == body["citations"]
    assert events["citations"]["unsupported_citations"] == 0
    # The quote itself is plain text: the index note's first sentences link notes.
    body = json.loads(post(client, "/ask", {"question": INDEX_QUESTION, "top_k": 10}).content)
    linked = [citation for citation in body["citations"] if "[[" in (citation["quote_raw"] or "")]
    assert linked, body["citations"]
    for citation in linked:
        assert "[[" not in citation["quote"] and "]]" not in citation["quote"]
        assert citation["quote"] == quote_plain(citation["quote_raw"])


def test_an_answer_citing_a_block_for_what_it_does_not_say_is_flagged(client, sample_index,
                                                                      config_override):
    with StubOpenAI(behaviour="json",
                    answer="Bananas ripen faster next to apples in a paper bag [1].") as stub:
        openai(config_override, stub, llm_timeout_seconds=5.0)
        body = json.loads(post(client, "/ask", {"question": IN_DOMAIN}).content)
    assert body["mode"] == "rag" and body["unsupported_citations"] == 1
    assert body["citations"][0]["quote"] is None and body["citations"][0]["quote_support"] is None
