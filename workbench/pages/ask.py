"""Ask from the workbench: the same `ask_stream_open` events as /ask/stream, turned into what
a page shows — streamed text, then the answer rendered safely with its source cards."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.template.loader import render_to_string

from answering.modes import MODE_NO_ANSWER
from answering.services import AskEventStream
from core.errors import LocalRagError
from knowledge.models import Chunk
from workbench.models import Feedback
from workbench.pages.sources import document_title
from workbench.rendering import answer_html, excerpt

EXCERPT_CHARS = 320


@dataclass
class AnswerView:
    """Everything the answer fragment shows."""

    mode: str = ""
    confidence: float | None = None
    text: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    removed: int = 0
    trace_id: str | None = None
    error: dict[str, Any] | None = None

    @property
    def look(self) -> str:
        """answer, no-answer, fallback or error: each has its own look on the page."""
        if self.error is not None:
            return "error"
        if self.mode == MODE_NO_ANSWER:
            return "no-answer"
        return "fallback" if self.mode == "fallback" else "answer"


def source_cards(stream: AskEventStream) -> list[dict[str, Any]]:
    """The plan's citations with what a card shows beyond the API shape: the chunk to link to,
    the document's title and an excerpt (chunks of this answer's own scoped retrieval)."""
    plan = stream.plan
    ids = [chunk_id for chunk_id in plan.chunk_ids if chunk_id is not None]
    rows = {row["id"]: row for row in Chunk.objects.filter(id__in=ids).values(
        "id", "content", "document__title", "document__original_name",
        "document__relative_path")}
    cards = []
    for number, (citation, chunk_id) in enumerate(zip(plan.citations, plan.chunk_ids), 1):
        row = rows.get(chunk_id) if chunk_id is not None else None
        title = (document_title({name.removeprefix("document__"): value
                                 for name, value in row.items()})
                 if row else citation["source"])
        cards.append({**citation, "number": number, "chunk_id": chunk_id, "title": title,
                      "excerpt": excerpt(row["content"] if row else "",
                                         limit=EXCERPT_CHARS)})
    return cards


def answer_events(stream: AskEventStream, view: AnswerView) -> Iterator[tuple[str, dict]]:
    """The stream's events for the page, filling `view` as they pass: `status`, `delta`... and
    finally `result` with the rendered answer (or the rendered error)."""
    view.citations = source_cards(stream)
    view.mode, view.confidence = stream.plan.mode, stream.plan.confidence
    pieces: list[str] = []
    for name, data in stream:
        if name == "retrieval":
            yield "status", {"mode": data["mode"], "sources": len(data["citations"])}
        elif name == "delta":
            pieces.append(data["text"])
            yield "delta", {"text": data["text"]}
        elif name == "citations":
            view.removed = data["invalid_citations_removed"]
        elif name == "done":
            view.trace_id = data.get("trace_id")
        elif name == "error":
            view.error = data["error"]
    view.text = "".join(pieces)
    yield "result", {"html": answer_fragment(view), "look": view.look}


def answer_error(exc: LocalRagError, *, trace_id: str | None) -> AnswerView:
    return AnswerView(error=exc.as_body()["error"], trace_id=trace_id)


def answer_fragment(view: AnswerView) -> str:
    return render_to_string("workbench/_answer.html", {
        "answer": view,
        "answer_html": answer_html(view.text, citation_count=len(view.citations)),
        "error_types": Feedback.ERROR_TYPES,
    })
