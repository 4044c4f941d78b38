"""The traces pages for researchers: the latest traces, filtered and paginated, and
everything of one trace with the feedback given on it.

A superuser sees every trace. Anyone else sees only the traces whose knowledge bases are all
among those they may research (researcher or maintainer), filtered in the query: a trace that
touched another base, one they only read, or none at all (a refused request, a command-line
call), is not found rather than forbidden, so its existence does not leak either.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from access.callers import Caller
from core.errors import NotFound
from knowledge.models import Chunk, KnowledgeBase
from traces.models import Trace
from workbench.models import Feedback

PAGE_SIZE = 50
FILTERS = ("operation", "channel", "status")
TOKEN_SOURCES = {"provider": gettext_lazy("reported by the LLM server"),
                 "counted": gettext_lazy("counted by local-rag")}


@dataclass(frozen=True)
class TraceRow:
    """One line of the list."""

    trace: Trace
    knowledge_bases: list[str]
    total_ms: float | None
    tokens: int | None


@dataclass(frozen=True)
class TraceFilter:
    name: str
    chosen: str  # "" for any
    values: list[str]  # those the visible traces have


@dataclass(frozen=True)
class TracesPage:
    page: Page
    rows: list[TraceRow]
    filters: list[TraceFilter]


@dataclass(frozen=True)
class TraceDetail:
    trace: Trace
    knowledge_bases: list[str]
    stages: list[tuple[str, float]]
    token_source: str  # in words
    citations: list[dict[str, Any]]
    feedback: list[Feedback]


def traces_visible(*, caller: Caller) -> QuerySet[Trace]:
    """The traces this person may see (see the module's docstring)."""
    traces = Trace.objects.all()
    if caller.everything or caller.admin:
        return traces
    return traces.filter(knowledge_base_ids__len__gt=0,
                         knowledge_base_ids__contained_by=sorted(caller.researching().readable))


def traces_page(*, caller: Caller, filters: Mapping[str, str], page: str | None) -> TracesPage:
    """The most recent visible traces, PAGE_SIZE a page, narrowed by operation, channel and
    status."""
    visible = traces_visible(caller=caller)
    # The values each filter offers, from one pass over the visible traces.
    combinations = set(visible.order_by().values_list(*FILTERS).distinct())
    values = {name: sorted({row[index] for row in combinations})
              for index, name in enumerate(FILTERS)}
    chosen = {name: (filters.get(name) or "").strip() for name in FILTERS}
    traces = visible.defer("question", "answer", "citations", "parameters")
    for name, value in chosen.items():
        if value in values[name]:
            traces = traces.filter(**{name: value})
        elif value:
            # Matches nothing; not sent to the database, which refuses a NUL byte in text.
            traces = traces.none()
    current = Paginator(traces.order_by("-created_at", "-id"), PAGE_SIZE).get_page(page)
    slugs = _slugs(base for trace in current for base in trace.knowledge_base_ids)
    rows = [TraceRow(trace=trace, knowledge_bases=_named(trace.knowledge_base_ids, slugs),
                     total_ms=trace.timings_ms.get("total"), tokens=_tokens(trace))
            for trace in current]
    options = [TraceFilter(name=name, chosen=chosen[name], values=values[name])
               for name in FILTERS]
    return TracesPage(page=current, rows=rows, filters=options)


def trace_detail(*, caller: Caller, trace_id: uuid.UUID) -> TraceDetail:
    """Everything recorded of one visible trace, its cited chunks as the index holds them now,
    and its feedback; NotFound for a trace this person may not see."""
    trace = traces_visible(caller=caller).filter(id=trace_id).first()
    if trace is None:
        raise NotFound("trace not found", details={"trace_id": str(trace_id)})
    slugs = _slugs(trace.knowledge_base_ids)
    feedback = list(Feedback.objects.filter(trace_id=str(trace.id)).select_related("user"))
    return TraceDetail(
        trace=trace, knowledge_bases=_named(trace.knowledge_base_ids, slugs),
        stages=list(trace.timings_ms.items()),
        token_source=str(TOKEN_SOURCES.get(trace.token_source or "", "–")),
        citations=_citations(trace.citations), feedback=feedback)


def _citations(cited: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each cited chunk with its recorded hash and whether the index still holds that text:
    a re-ingested note has new chunk rows, so an old trace's chunk may be gone or changed."""
    ids = [entry.get("chunk_id") for entry in cited if entry.get("chunk_id") is not None]
    now = {row["id"]: row for row in Chunk.objects.filter(id__in=ids).values(
        "id", "content_hash", "relative_path", "heading_path", "page_start", "page_end")}
    citations = []
    for number, entry in enumerate(cited, start=1):
        chunk_id = entry.get("chunk_id")
        row = now.get(chunk_id) if chunk_id is not None else None
        if row is None:
            state = _("no longer in the index")
        elif row["content_hash"] == entry.get("content_hash"):
            state = _("unchanged")
        else:
            state = _("changed since")
        citations.append({"number": number, "chunk_id": entry.get("chunk_id"),
                          "content_hash": entry.get("content_hash"), "state": state,
                          "chunk": row})
    return citations


def _slugs(ids: Iterable[int]) -> dict[int, str]:
    return dict(KnowledgeBase.objects.filter(id__in=set(ids)).values_list("id", "slug"))


def _named(ids: list[int], slugs: dict[int, str]) -> list[str]:
    # A base deleted since keeps its id on the trace.
    return [slugs.get(base, f"#{base}") for base in ids]


def _tokens(trace: Trace) -> int | None:
    if trace.prompt_tokens is None and trace.completion_tokens is None:
        return None
    return (trace.prompt_tokens or 0) + (trace.completion_tokens or 0)
