"""Ask from the workbench: the same `ask_stream_open` events as /ask/stream, turned into what
a page shows — streamed text, then the answer rendered safely with its source cards. A
conversation's answers (workbench/pages/conversations.py) are shown with the same pieces."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.template.loader import render_to_string

from access.callers import Caller
from answering.modes import MODE_NO_ANSWER
from answering.quote_places import PLACE_FIELDS, QUOTE_FIELDS
from answering.services import AskPlan
from answering.streaming import RecordedEvents
from core.errors import LocalRagError
from knowledge.models import Chunk, KnowledgeBase
from parsing.formats import format_name
from traces.recording import Trace, measured_of, trace_record
from workbench.answer_texts import error_text, no_answer_localised, notice_cause
from workbench.models import Feedback
from workbench.pages.quotes import quoted_cards
from workbench.pages.sources import document_title
from workbench.pages.wikilinks import linked_answer
from workbench.rendering import WikiLink, answer_html, excerpt_html

EXCERPT_CHARS = 320
_CHUNK_FIELDS = ("id", "content", "content_hash", "document__title", "document__original_name",
                 "document__source_name", "document__relative_path")


@dataclass(frozen=True)
class ScoresShown:
    """Which numbers a person sees with an answer: a source card's score when they research
    its base, the answer's confidence when they research every base it searched. Readers see
    the answer and its sources only."""

    bases: frozenset[str] = frozenset()  # slugs
    confidence: bool = False


def scores_shown(*, caller: Caller, slugs: list[str] | None) -> ScoresShown:
    """What `caller` sees of an answer over the bases `slugs` (None: every base it reads)."""
    rows = KnowledgeBase.objects.filter(id__in=caller.scope().knowledge_base_ids).values_list(
        "id", "slug")
    studied = frozenset(slug for base_id, slug in rows if caller.may_research(base_id))
    searched = {slug for _base_id, slug in rows if slugs is None or slug in slugs}
    return ScoresShown(bases=studied, confidence=searched <= studied)


@dataclass
class AnswerView:
    """Everything the answer fragment shows."""

    mode: str = ""
    confidence: float | None = None
    text: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    removed: int = 0
    # How many markers of the answer no sentence of their source supports.
    unsupported: int = 0
    trace_id: str | None = None
    error: dict[str, Any] | None = None
    # The model failed and the sources are shown instead (`on_llm_error: sources`).
    notice: dict[str, Any] | None = None
    # An answer in a conversation: feedback goes to its message; what its owner said so far.
    message_id: int | None = None
    feedback: dict[str, Any] | None = None
    # The prefix of its source cards' ids (`source-1`, ...), unique among the page's answers.
    anchor: str = "source-"
    # The source view of each note the answer's wikilinks name (workbench/pages/wikilinks.py).
    links: dict[WikiLink, str] = field(default_factory=dict)
    # None are shown unless the page says which (`scores_shown`).
    shown: ScoresShown = field(default_factory=ScoresShown)

    @property
    def look(self) -> str:
        """answer, no-answer, fallback, sources-only or error: each has its own look."""
        if self.error is not None:
            return "error"
        if self.notice is not None:
            return "sources-only"
        if self.mode == MODE_NO_ANSWER:
            return "no-answer"
        return "fallback" if self.mode == "fallback" else "answer"


def chunk_rows(chunk_ids: Iterable[int | None], *,
               knowledge_base_ids: Sequence[int] | None = None) -> dict[int, dict[str, Any]]:
    """What a source card shows of each chunk that still exists (only those of
    `knowledge_base_ids` when given), by id."""
    chunks = Chunk.objects.filter(id__in=[chunk_id for chunk_id in chunk_ids
                                          if chunk_id is not None])
    if knowledge_base_ids is not None:
        chunks = chunks.filter(knowledge_base_id__in=knowledge_base_ids)
    return {row["id"]: row for row in chunks.values(*_CHUNK_FIELDS)}


def citation_cards(citations: Sequence[dict[str, Any]], chunk_ids: Sequence[int | None],
                   rows: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Citations with what a card shows beyond the API shape: the chunk to link to (when it is
    in `rows`), the document's title and an excerpt. `quoted_cards` adds the quote's link."""
    cards = []
    for number, (citation, chunk_id) in enumerate(zip(citations, chunk_ids, strict=False), 1):
        row = rows.get(chunk_id) if chunk_id is not None else None
        title = (document_title({name.removeprefix("document__"): value
                                 for name, value in row.items()})
                 if row else citation["source"])
        cards.append({**citation, "number": number, "chunk_id": chunk_id if row else None,
                      "title": title,
                      "excerpt": card_excerpt(row["content"], row["document__relative_path"])
                      if row else ""})
    return cards


def card_excerpt(content: str, path: str) -> str:
    """What a card shows of a chunk's `content`, of a document at `path`."""
    return excerpt_html(content, limit=EXCERPT_CHARS, markdown=format_name(path) == "markdown")


def plan_cards(plan: AskPlan) -> list[dict[str, Any]]:
    """The source cards of a plan's citations (chunks of its own scoped retrieval)."""
    return citation_cards(plan.citations, plan.chunk_ids, chunk_rows(plan.chunk_ids))


def source_cards(stream: RecordedEvents) -> list[dict[str, Any]]:
    """The source cards of an Ask stream."""
    return plan_cards(stream.plan)


def answer_events(stream: RecordedEvents, view: AnswerView) -> Iterator[tuple[str, dict]]:
    """The stream's events for the page, filling `view` as they pass: `status`, `delta`... and
    finally `result` with the rendered answer (or the rendered error)."""
    view.citations = source_cards(stream)
    yield from answer_progress(stream, view, plan=stream.plan)
    yield "result", {"html": answer_fragment(view), "look": view.look}


def answer_progress(events: Iterable[tuple[str, dict]], view: AnswerView, *,
                    plan: AskPlan) -> Iterator[tuple[str, dict]]:
    """The /ask/stream `events` of `plan` as the page's `status` and `delta`..., filling
    `view` (its text, notice, error and ids, its cards' quotes) as they pass."""
    view.mode, view.confidence = plan.mode, plan.confidence
    pieces: list[str] = []
    for name, data in events:
        if name == "retrieval":
            status = {"mode": data["mode"], "sources": len(data["citations"])}
            if data.get("condensation"):  # a question in a conversation
                status.update(standalone_query=data["standalone_query"],
                              condensation=data["condensation"])
            yield "status", status
        elif name == "delta":
            pieces.append(data["text"])
            yield "delta", {"text": data["text"]}
        elif name == "notice":
            view.notice = data
            yield "notice", {"message": data["message"]}
        elif name == "citations":
            view.removed = data["invalid_citations_removed"]
            view.unsupported = data.get("unsupported_citations", 0)
            # The quotes come with the answer's end, after the cards were made, and with them
            # the heading path and pages of the chunk each quote lies in.
            view.citations = [{**card, **{key: citation.get(key, card.get(key))
                                          for key in (*PLACE_FIELDS, *QUOTE_FIELDS)}}
                              for card, citation in zip(view.citations, data["citations"],
                                                        strict=False)]
        elif name == "done":
            view.trace_id = data.get("trace_id")
            view.message_id = data.get("message_id")
        elif name == "error":
            view.error = data["error"]
    view.text = "".join(pieces)
    view.citations, view.links = linked_answer(
        quoted_cards(view.citations, answer=view.text, checked=view.look == "answer",
                     excerpt=card_excerpt),
        answer=view.text)


def answer_error(exc: LocalRagError, *, trace_id: str | None) -> AnswerView:
    return AnswerView(error=exc.as_body()["error"], trace_id=trace_id)


def answer_failed(exc: LocalRagError, *, trace: Trace | None) -> AnswerView:
    """The answer of a request refused before generation, its error put on the trace with
    what the services measured before it."""
    trace_record(trace, *measured_of(exc))
    if trace is not None:
        trace.fail(exc.code)
    return answer_error(exc, trace_id=trace.id if trace is not None else None)


def answer_fragment(view: AnswerView) -> str:
    return render_to_string("workbench/_answer.html", answer_context(view))


def answer_context(view: AnswerView) -> dict[str, Any]:
    """What workbench/_answer.html needs to show `view`."""
    notice_text = view.notice["message"] if view.notice else ""
    # The fixed no_answer text is bilingual in the API; the page shows it in its own language.
    text = no_answer_localised(view.text) if view.look == "no-answer" else view.text
    return {
        "answer": view,
        "error_text": error_text(view.error) if view.error else "",
        "notice_cause": notice_cause(view.notice) if view.notice else "",
        # With a notice, the text is the notice itself unless part of an answer came first.
        "answer_html": (answer_html(text, citation_count=len(view.citations),
                                    anchor=view.anchor,
                                    unverified={card["number"] for card in view.citations
                                                if card.get("unverified")}, links=view.links)
                        if view.text and view.text != notice_text else ""),
        "error_types": Feedback.ERROR_TYPES,
    }
