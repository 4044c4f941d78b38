"""The ask service end to end in-process: the four mode rows, citations and invalid markers."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from access.callers import scope_all
from answering import services
from answering.api_schemas import ask_body
from answering.llm import FAKE_FALLBACK_ANSWER
from answering.modes import FALLBACK_NOTICE
from answering.quote_places import QUOTE_FIELDS
from answering.services import AnswerRequest, ask, ask_prepare
from answering.streaming import ask_events
from core.config import get_config
from knowledge.ingest import IngestRequest, vault_ingest
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.api.http import unquoted
from tests.conftest import PAGED_SOURCE
from tests.harness import ROOT

IN_DOMAIN = "客户 P1 工单应该怎么升级？"
OUT_OF_DOMAIN = "明天巴黎天气如何？"


def test_confident_question_is_answered_from_context_with_citations(sample_index):
    body = ask_body(ask(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=None,
                                      fallback=False), config=get_config()), trace_id=None)
    assert body["mode"] == "rag"
    assert body["confidence"] == search(RetrievalRequest(query=IN_DOMAIN, scope=scope_all(),
                                                         top_k=None),
                                        config=get_config()).confidence
    assert body["citations"][0]["source"] == "policies/Support Escalation Policy.md"
    assert "[1]" in body["answer"] and body["invalid_citations_removed"] == 0
    assert set(body["citations"][0]) == {"source", "heading", "heading_path", "score",
                                         "chunk_index", "page_start", "page_end",
                                         "knowledge_base", "document_id", *QUOTE_FIELDS}
    assert body["citations"][0]["knowledge_base"] == "default"


def test_context_headers_and_citations_name_the_pages_of_paged_sources(paged_index):
    plan = ask_prepare(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=10,
                                     fallback=False), config=get_config())
    assert plan.mode == "rag"
    headers = re.findall(r"^\[(\d+)\] source: (.*)$", plan.messages[-1]["content"], re.MULTILINE)
    assert [int(number) for number, _ in headers] == list(range(1, len(plan.citations) + 1))
    labels = {(3, 3): "p. 3", (3, 4): "p. 3–4"}
    for (_, source_line), citation in zip(headers, plan.citations, strict=True):
        pages = (citation["page_start"], citation["page_end"])
        if citation["source"] == PAGED_SOURCE:
            # The citation names its chunk's own pages; the header, those of the run of
            # adjacent chunks the block holds (answering/context.py).
            assert pages == paged_index[citation["chunk_index"]]
            assert source_line in {f"{PAGED_SOURCE}, {label}" for label in labels.values()}
            if pages == (3, 4):
                assert source_line == f"{PAGED_SOURCE}, p. 3–4"
        else:
            assert pages == (None, None) and source_line == citation["source"]
    lines = {source_line for _, source_line in headers}
    assert any(line.startswith(PAGED_SOURCE) for line in lines)
    assert any(not line.startswith(PAGED_SOURCE) for line in lines)


def test_below_threshold_without_fallback_is_no_answer(sample_index):
    body = ask_body(ask(AnswerRequest(question=OUT_OF_DOMAIN, scope=scope_all(), top_k=None,
                                      fallback=False), config=get_config()), trace_id=None)
    assert body["mode"] == "no_answer" and body["citations"] == []
    assert "knowledge base" in body["answer"] and "知识库" in body["answer"]
    assert "See also:" in body["answer"]
    assert "fallback" not in body["answer"].lower()


def test_fallback_requested_but_disabled_says_so(sample_index, config_override):
    config = config_override(rag_fallback_enabled=False)
    body = ask_body(ask(AnswerRequest(question=OUT_OF_DOMAIN, scope=scope_all(), top_k=None,
                                      fallback=True), config=config), trace_id=None)
    assert body["mode"] == "no_answer"
    assert "fallback" in body["answer"] and "disabled" in body["answer"]


def test_fallback_requested_and_enabled_prefixes_the_notice(sample_index, config_override):
    config = config_override(rag_fallback_enabled=True)
    body = ask_body(ask(AnswerRequest(question=OUT_OF_DOMAIN, scope=scope_all(), top_k=None,
                                      fallback=True), config=config), trace_id=None)
    assert body["mode"] == "fallback" and body["citations"] == []
    assert body["answer"] == FALLBACK_NOTICE + FAKE_FALLBACK_ANSWER


def test_fallback_stream_starts_with_the_notice(sample_index, config_override):
    config = config_override(rag_fallback_enabled=True)
    events = list(ask_events(ask_prepare(AnswerRequest(question=OUT_OF_DOMAIN, scope=scope_all(),
                                                       top_k=None, fallback=True), config=config)))
    assert events[0] == ("retrieval", {"mode": "fallback", "confidence": events[0][1]["confidence"],
                                       "citations": [], "refusal": events[0][1]["refusal"]})
    assert events[0][1]["refusal"]["grounded"] is False
    assert events[1] == ("delta", {"text": FALLBACK_NOTICE})
    assert "".join(data["text"] for name, data in events if name == "delta") == (
        FALLBACK_NOTICE + FAKE_FALLBACK_ANSWER)


def test_confident_question_ignores_fallback_flag(sample_index, config_override):
    config = config_override(rag_fallback_enabled=True)
    assert ask_body(ask(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=None,
                                      fallback=True), config=config),
                    trace_id=None)["mode"] == "rag"


def test_explicit_threshold_changes_the_mode(sample_index, config_override):
    config = config_override(rag_min_similarity=0.99)
    assert ask_body(ask(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=None,
                                      fallback=False), config=config),
                    trace_id=None)["mode"] == "no_answer"


def test_stream_deltas_concatenate_to_the_ask_answer(sample_index):
    config = get_config()
    whole = ask_body(ask(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=3,
                                       fallback=False), config=config), trace_id=None)
    events = list(ask_events(ask_prepare(AnswerRequest(question=IN_DOMAIN, scope=scope_all(),
                                                       top_k=3, fallback=False), config=config)))
    names = [name for name, _ in events]
    assert names[0] == "retrieval" and names[-3:] == ["citations", "usage", "done"]
    assert set(names[1:-3]) == {"delta"} and len(names) > 4
    assert "".join(data["text"] for name, data in events if name == "delta") == whole["answer"]
    assert unquoted(events[0][1]["citations"], quoted=whole["citations"]) == unquoted(
        whole["citations"])
    assert whole["citations"] == events[-3][1]["citations"]


def test_no_answer_streams_its_message_as_one_delta(sample_index):
    config = get_config()
    events = list(ask_events(ask_prepare(AnswerRequest(question=OUT_OF_DOMAIN, scope=scope_all(),
                                                       top_k=None, fallback=False), config=config)))
    deltas = [data["text"] for name, data in events if name == "delta"]
    assert len(deltas) == 1
    assert deltas[0] == ask_body(ask(AnswerRequest(question=OUT_OF_DOMAIN, scope=scope_all(),
                                                   top_k=None, fallback=False), config=config),
                                 trace_id=None)["answer"]


@pytest.mark.parametrize("markers", ["[9]", "[0] and [42]"])
def test_invalid_citation_markers_are_removed_and_counted(sample_index, config_override,
                                                           markers):
    from tests.answering.stub_openai import StubOpenAI

    with StubOpenAI(behaviour="json", answer=f"Escalate within 15 minutes [1] {markers}.") as stub:
        config = config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                                 llm_model="m", llm_api_key="k")
        body = ask_body(ask(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=None,
                                          fallback=False), config=config), trace_id=None)
    assert body["answer"].startswith("Escalate within 15 minutes [1]")
    assert "[9]" not in body["answer"] and "[42]" not in body["answer"]
    assert body["invalid_citations_removed"] == markers.count("[")


def test_query_without_tokens_is_no_answer_even_at_threshold_zero(sample_index, config_override):
    config = config_override(rag_min_similarity=0.0)
    body = ask_body(ask(AnswerRequest(question="？！ …", scope=scope_all(), top_k=None,
                                      fallback=False), config=config), trace_id=None)
    assert (body["mode"], body["confidence"], body["citations"]) == ("no_answer", 0.0, [])


def test_budget_too_small_for_any_block_is_no_answer(sample_index, config_override):
    config = config_override(rag_context_token_budget=5)
    body = ask_body(ask(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=None,
                                      fallback=False), config=config), trace_id=None)
    assert body["mode"] == "no_answer" and body["confidence"] >= 0.2


class _ConnectionProbe:
    """An LLM client that notes whether Django's connection was open while it answered."""

    def __init__(self) -> None:
        self.open_during_call: list[bool] = []

    def complete(self, *, messages):
        self.open_during_call.append(connection.connection is not None)
        return "Escalate within 15 minutes [1]."

    def stream(self, *, messages):
        self.open_during_call.append(connection.connection is not None)
        yield "Escalate [1]."


def test_no_database_connection_is_held_while_the_llm_answers(clean_tables, monkeypatch):
    vault_ingest(IngestRequest(vault_path=ROOT / "samples" / "acme-vault", prepare_workers=0),
                 config=get_config())
    probe = _ConnectionProbe()
    monkeypatch.setattr(services, "get_llm_client", lambda *, config: probe)
    body = ask_body(ask(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=None,
                                      fallback=False), config=get_config()), trace_id=None)
    plan = ask_prepare(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=None,
                                     fallback=False), config=get_config())
    assert connection.connection is not None  # retrieval used it just now
    events = list(ask_events(plan))
    assert body["answer"] == "Escalate within 15 minutes [1]." and events[-1][0] == "done"
    assert probe.open_during_call == [False, False]
    # The next query simply reconnects.
    assert search(RetrievalRequest(query=IN_DOMAIN, scope=scope_all(), top_k=1),
                  config=get_config()).results


def test_a_long_table_reaches_the_model_with_its_header_row_from_the_asked_rows_chunk(
        db, tmp_path, config_override):
    """Every chunk of a long table repeats its caption and header row (parsing/tables.py), so
    the chunk holding the asked row brings them to the model by itself, without neighbours
    (RAG_CONTEXT_NEIGHBOURS=0)."""
    rows = "\n".join(f"| ZK-{n:04d} | {10 + n * 0.5:.1f} | {12 + n * 0.5:.1f} | 0.{n % 90 + 10} |"
                     for n in range(55))
    (tmp_path / "drill.md").write_text(
        "# Drill report\n\n## Intervals\n\nTable 4 Drill intervals of the 2023 campaign\n\n"
        "| hole | from (m) | to (m) | Cu % |\n| --- | --- | --- | --- |\n" + rows + "\n")
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())
    with connection.cursor() as cursor:
        cursor.execute("SELECT content FROM chunks ORDER BY chunk_index")
        chunks = [content for (content,) in cursor.fetchall()]
    assert len(chunks) > 2
    assert all("Table 4 Drill intervals of the 2023 campaign\n\n| hole | from (m) | to (m) | "
               "Cu % |\n| --- |" in content for content in chunks)
    asked = "ZK-0054"
    assert sum(asked in content for content in chunks) == 1
    config_override(rag_context_neighbours=0)
    plan = ask_prepare(AnswerRequest(question=f"What is the copper grade of hole {asked}?",
                                     scope=scope_all(), top_k=1, fallback=False),
                       config=get_config())
    assert plan.mode == "rag", (plan.mode, plan.confidence, plan.refusal)
    (block,) = plan.block_contents
    assert asked in block
    assert "| hole | from (m) | to (m) | Cu % |" in block and "Table 4 Drill intervals" in block


def test_a_sentence_cut_by_a_page_break_reaches_the_model_whole(db, tmp_path, config_override):
    """A PDF whose page break cuts a sentence: its pages are chunks of their own, and retrieval
    returns only the second; the context takes on the first, which says what the sentence is
    about (RAG_CONTEXT_NEIGHBOURS)."""
    from tests.parsing.formats.files import pdf_bytes

    opening = ("Shaft report 2024. Dewatering of the north shaft stopped in February when the "
               "main pump failed. The replacement pump, ordered from Hartmann Pumps of Bremen, "
               "will")
    rest = "arrive on 14 April 2024 and be installed by the shaft crew within two shifts."
    (tmp_path / "shaft.pdf").write_bytes(pdf_bytes([opening, rest]))
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())
    with connection.cursor() as cursor:
        cursor.execute("SELECT chunk_index, content, page_start FROM chunks ORDER BY chunk_index")
        chunks = cursor.fetchall()
    # The page break is the chunk boundary, and it falls inside the sentence.
    assert [(index, page) for index, _, page in chunks] == [(0, 1), (1, 2)]
    assert chunks[0][1].rstrip().endswith("will") and chunks[1][1].startswith("arrive")
    question = "What arrives on 14 April 2024, to be installed by the shaft crew?"
    plan = ask_prepare(AnswerRequest(question=question, scope=scope_all(), top_k=1, fallback=False),
                       config=get_config())
    assert plan.mode == "rag", (plan.mode, plan.confidence, plan.refusal)
    assert plan.citations[0]["chunk_index"] == 1 and plan.citations[0]["page_start"] == 2
    (block,) = plan.block_contents
    assert "Hartmann Pumps" in block and "arrive on 14 April 2024" in block
    assert "source: shaft.pdf, p. 1–2" in plan.messages[-1]["content"]
    config_override(rag_context_neighbours=0)
    alone = ask_prepare(AnswerRequest(question=question, scope=scope_all(), top_k=1,
                                      fallback=False), config=get_config())
    assert alone.block_contents == [chunks[1][1]]


def test_the_memo_beyond_the_top_k_reaches_the_answers_context(db, tmp_path, monkeypatch):
    # Five chunks of one report fill the top 5; the per-document cap frees places, and the
    # memo below them takes one. Confidence and refusal stay the top_k search's, and the
    # question is embedded once for both searches.
    from embeddings import FakeLexicalEmbedder
    from tests.answering.test_context_hits import QUESTION, vault_write

    vault_write(tmp_path, parts=12)
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())
    outcome = search(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=5),
                     config=get_config())
    assert {hit.source for hit in outcome.results} == {"report.md"}
    embedded = []
    embed_query = FakeLexicalEmbedder.embed_query
    monkeypatch.setattr(FakeLexicalEmbedder, "embed_query",
                        lambda self, text: embedded.append(text) or embed_query(self, text))
    plan = ask_prepare(AnswerRequest(question=QUESTION, scope=scope_all(), top_k=5, fallback=False),
                       config=get_config())
    assert embedded == [QUESTION]
    assert plan.mode == "rag"
    assert "memo.md" in [citation["source"] for citation in plan.citations]
    assert plan.confidence == outcome.confidence
