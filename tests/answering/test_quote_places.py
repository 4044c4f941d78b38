"""A citation names the place of its quote: a block merged from adjacent chunks keeps each
chunk's heading path, pages and span of its text, and a quoted citation carries the heading,
heading path and pages of the chunk holding the quote (or of every chunk it spans), in /ask,
its stream, the trace and its replay. The quote itself is plain text."""

from __future__ import annotations

import pytest

from answering.context import RUN_SEPARATOR, context_build
from answering.quote_places import QUOTE_FIELDS, quote_fields, quote_plain
from answering.quotes import Quote
from answering.services import AskPlan
from retrieval.types import SearchHit

SOURCE = "manuals/battery.pdf"
SAFETY = "A swollen battery must be taken out of service at once and kept in a fireproof box."
WARRANTY = "The warranty covers the device for two years."
CHARGING = "Charging a swollen battery is dangerous; charge only with the supplied charger."


def hit(content: str, *, chunk_index: int, heading_path: list[str], score: float,
        page: int | None = None, source: str = SOURCE) -> SearchHit:
    return SearchHit(content=content, source=source, relative_path=source,
                     heading_path=heading_path, heading=heading_path[-1], score=score,
                     chunk_index=chunk_index, document_id=7, content_hash=f"h{chunk_index}",
                     page_start=page, page_end=page, knowledge_base="default",
                     chunk_id=100 + chunk_index)


def manual_hits() -> list[SearchHit]:
    """A PDF's three pages, one chunk each; the best is the last (page 3)."""
    return [hit(CHARGING, chunk_index=2, heading_path=["Manual", "Charging"], score=0.9, page=3),
            hit(SAFETY, chunk_index=0, heading_path=["Manual", "Safety"], score=0.5, page=1),
            hit(WARRANTY, chunk_index=1, heading_path=["Manual", "Warranty"], score=0.4, page=2)]


def answered(hits: list[SearchHit], answer: str) -> AskPlan:
    """The plan of a context of `hits` with `answer`'s quotes attached, as the ask path does."""
    context = context_build(hits=hits, token_budget=4000)
    plan = AskPlan(mode="rag", confidence=0.9,
                   citations=[citation.as_dict() for citation in context.citations],
                   block_count=context.blocks, block_contents=list(context.contents),
                   block_chunks=[citation.chunks for citation in context.citations])
    plan.quotes_attach(answer)
    return plan


def test_a_merged_block_keeps_each_chunks_section_pages_and_span_of_its_text():
    context = context_build(hits=manual_hits(), token_budget=4000)
    (citation,) = context.citations
    (text,) = context.contents
    assert text == RUN_SEPARATOR.join([SAFETY, WARRANTY, CHARGING])
    assert [(chunk.chunk_index, chunk.heading_path, chunk.page_start, chunk.page_end)
            for chunk in citation.chunks] == [(0, ("Manual", "Safety"), 1, 1),
                                              (1, ("Manual", "Warranty"), 2, 2),
                                              (2, ("Manual", "Charging"), 3, 3)]
    assert [text[chunk.start:chunk.end] for chunk in citation.chunks] == [
        SAFETY, WARRANTY, CHARGING]
    # Unquoted, the block is cited by its best chunk, as before.
    assert (citation.chunk_index, citation.heading, citation.page_start) == (2, "Charging", 3)


def test_a_quote_from_another_page_than_the_best_chunks_names_that_page_and_section():
    plan = answered(manual_hits(), "Take a swollen battery out of service at once [1].")
    (cited,) = plan.citations
    assert cited["quote"] == SAFETY and cited["quote_raw"] == SAFETY
    assert (cited["page_start"], cited["page_end"]) == (1, 1)
    assert (cited["heading"], cited["heading_path"]) == ("Safety", ["Manual", "Safety"])
    assert (cited["quote_chunk_index"], cited["quote_chunk_start"],
            cited["quote_chunk_end"]) == (0, 0, len(SAFETY))
    # The block's best chunk still gives the score and chunk_index; the offsets stay the
    # block's.
    assert (cited["chunk_index"], cited["score"]) == (2, 0.9)
    assert plan.block_contents[0][cited["quote_start"]:cited["quote_end"]] == cited["quote_raw"]
    assert plan.quoted is not None and plan.quoted.chunks[0] is not None
    assert (plan.quoted.chunks[0].chunk_id, plan.quoted.chunks[0].chunk_index) == (100, 0)


def test_a_quote_from_the_other_section_of_a_note_names_that_section():
    note = "finance/expenses.md"
    travel = "## 差旅报销\n\n发票必须在出差结束后 30 天内提交。"
    deadline = "## 报销时限\n\n报销时限按财务部的月度结算安排执行，逾期不予报销。"
    hits = [hit(deadline, chunk_index=1, heading_path=["报销制度", "报销时限"], score=0.8,
                source=note),
            hit(travel, chunk_index=0, heading_path=["报销制度", "差旅报销"], score=0.6,
                source=note)]
    (cited,) = answered(hits, "发票必须在出差结束后 30 天内提交 [1]。").citations
    assert cited["quote"] == "发票必须在出差结束后 30 天内提交。"
    assert (cited["heading"], cited["heading_path"]) == ("差旅报销", ["报销制度", "差旅报销"])
    assert (cited["page_start"], cited["page_end"]) == (None, None)
    assert cited["chunk_index"] == 1 and cited["quote_chunk_index"] == 0
    assert travel[cited["quote_chunk_start"]:cited["quote_chunk_end"]] == cited["quote_raw"]


def test_a_quote_in_the_best_chunk_names_the_best_chunk():
    (cited,) = answered(manual_hits(), "Charging a swollen battery is dangerous [1].").citations
    assert (cited["heading"], cited["page_start"], cited["quote_chunk_index"]) == (
        "Charging", 3, 2)
    start = len(SAFETY) + len(WARRANTY) + 2 * len(RUN_SEPARATOR)
    assert (cited["quote_start"], cited["quote_chunk_start"]) == (start, 0)


def test_a_block_without_a_quote_keeps_its_best_chunks_heading_and_pages():
    plan = answered(manual_hits(), "Bananas ripen next to apples [1].")
    (cited,) = plan.citations
    assert plan.unsupported_citations == 1
    assert {field: cited[field] for field in QUOTE_FIELDS} == dict.fromkeys(QUOTE_FIELDS)
    assert (cited["heading_path"], cited["page_start"], cited["page_end"]) == (
        ["Manual", "Charging"], 3, 3)
    assert plan.quoted is not None and plan.quoted.chunks == (None,)


def test_a_quote_over_two_chunks_names_their_shared_section_and_all_their_pages():
    context = context_build(hits=manual_hits(), token_budget=4000)
    (citation,) = context.citations
    (text,) = context.contents
    start = text.index("fireproof box.")
    end = text.index("two years.") + len("two years.")
    fields = quote_fields(Quote(text=text[start:end], start=start, end=end, support=1.0),
                          chunks=citation.chunks)
    assert (fields["page_start"], fields["page_end"]) == (1, 2)
    # The sections differ below "Manual": the one holding the whole span is "Manual".
    assert (fields["heading_path"], fields["heading"]) == (["Manual"], "Manual")
    assert fields["quote_chunk_index"] == 0
    assert SAFETY[fields["quote_chunk_start"]:fields["quote_chunk_end"]] == "fireproof box."
    assert fields["quote"] == "fireproof box. The warranty covers the device for two years."


def test_a_quote_over_sections_that_share_nothing_names_the_document():
    hits = [hit("First part ends here.", chunk_index=0, heading_path=["Alpha"], score=0.9),
            hit("Second part starts here.", chunk_index=1, heading_path=["Beta"], score=0.8)]
    context = context_build(hits=hits, token_budget=4000)
    (text,) = context.contents
    fields = quote_fields(Quote(text=text, start=0, end=len(text), support=1.0),
                          chunks=context.citations[0].chunks)
    assert (fields["heading_path"], fields["heading"]) == ([], "")


@pytest.mark.parametrize("raw, plain", [
    ("**P2（High）**：核心功能严重受损。", "P2（High）：核心功能严重受损。"),
    ("**P2（High）**核心功能严重受损。", "P2（High）核心功能严重受损。"),
    ("Run `rag ingest` first.", "Run rag ingest first."),
    ("See [[Data Handling Policy]] for PII.", "See Data Handling Policy for PII."),
    ("See [[Data Handling Policy#PII|the PII rules]].", "See the PII rules."),
    ("See [[A|b]] and [[Note#Heading]].", "See b and Note."),
    ("<script>alert(1)</script> stays text.", "<script>alert(1)</script> stays text."),
    ("Plain words   with  blanks.", "Plain words with blanks."),
])
def test_a_quote_reads_as_plain_text(raw, plain):
    assert quote_plain(raw) == plain


def test_a_markdown_quote_is_plain_while_quote_raw_is_the_span_itself():
    raw = "- **P2（High）**：核心功能严重受损，参见 [[Data Handling Policy]]。"
    hits = [hit(f"## 优先级\n\n{raw}", chunk_index=0, heading_path=["优先级"], score=0.9,
                source="policies/escalation.md")]
    plan = answered(hits, "P2 是核心功能严重受损 [1]。")
    (cited,) = plan.citations
    assert cited["quote"] == "P2（High）：核心功能严重受损，参见 Data Handling Policy。"
    assert cited["quote_raw"] == raw[2:]  # without the list item's bullet
    assert plan.block_contents[0][cited["quote_start"]:cited["quote_end"]] == cited["quote_raw"]
