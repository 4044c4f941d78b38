"""A trace of every search and answer: one row in `traces` per /search, /ask, /ask/stream,
CLI or MCP call, with a trace id the caller gets back (the X-Request-ID header, `trace_id` in
JSON bodies).

The entry point (an API middleware, a command, an MCP tool) begins a trace. The services it
calls never see the trace: they return what they measured — retrieval parameters and stage
times, the models, token counts, the cited chunks — as typed measures (`Measured`), and the
entry point records them (`trace_record`); a service that fails after measuring something keeps
it on the error it raises (`measured_on_failure`), which is recorded with the error. What a
service may know of its trace is a `TraceRef`: the id its answer names and when the request
began. The entry point finishes the trace, which writes the row.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import random
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import connection, transaction
from django.http import HttpRequest

from core.config import get_config
from core.db import db_errors_translated
from core.errors import LocalRagError
from core.logs import trace_id_var
from core.prices import llm_cost
from traces import sql

logger = logging.getLogger("localrag.traces")

# One write in this many also deletes the traces past their retention: no scheduler needed.
PRUNE_EVERY = 100

# Where an error keeps what the service raising it measured first (`measured_on_failure`).
_MEASURED = "trace_measured"


@dataclass(frozen=True)
class TraceRef:
    """What a service may know of the trace it runs under: its id (a stream's `done` event and a
    stored answer name it) and when its request began (a stream's `usage` counts from then)."""

    id: str
    started: float


class Measured(Protocol):
    """What a service measured, recorded in a trace by the entry point that called it."""

    def record(self, trace: Trace) -> None: ...


@dataclass
class Trace:
    operation: str
    channel: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.perf_counter)
    caller: str = ""
    user_id: int | None = None
    token_id: int | None = None
    knowledge_base_ids: list[int] = field(default_factory=list)
    status: str = "ok"
    error_code: str | None = None
    mode: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    embedding_model: str | None = None
    llm_model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Where the token numbers came from: "provider" (the LLM server's `usage`) or "counted"
    # (core/text_tokens.py); None without an LLM call.
    token_source: str | None = None
    prompt_version: str | None = None
    citations: list[dict[str, Any]] = field(default_factory=list)
    question: str | None = None
    answer: str | None = None
    # Set by a request that turned out to search and answer nothing (not recorded).
    discarded: bool = False
    _log_token: contextvars.Token[str | None] | None = field(default=None, repr=False)

    def caller_set(self, caller: Any) -> None:
        """Who asked: an access.callers.Caller (its label and ids, never a secret)."""
        if caller is not None and hasattr(caller, "label"):
            self.caller = caller.label
            self.user_id = caller.user_id
            self.token_id = caller.token_id

    def stage(self, name: str, milliseconds: float) -> None:
        self.timings_ms[name] = round(milliseconds, 2)

    def stages(self, timings_ms: Mapping[str, float]) -> None:
        for name, milliseconds in timings_ms.items():
            self.stage(name, milliseconds)

    def fail(self, code: str) -> None:
        """A failure that is answered rather than raised (an error event, a notice)."""
        self.status, self.error_code = "error", code

    def outbound_add(self, records: Iterable[dict[str, Any]]) -> None:
        """What left this machine (knowledge/outbound.py), in the order it was sent."""
        for record in records:
            self.parameters.setdefault("outbound", []).append(record)

    def ref(self) -> TraceRef:
        return TraceRef(id=self.id, started=self.started)


def trace_begin(*, operation: str, channel: str, caller: Any = None) -> Trace:
    """Start a trace; the log lines written in this context (thread or task) carry its id."""
    trace = Trace(operation=operation, channel=channel)
    trace.caller_set(caller)
    trace_attach(trace)
    return trace


def trace_of(request: HttpRequest) -> Trace | None:
    """The trace TraceMiddleware began for `request` (localrag_site/tracing.py); None when the
    request is not traced."""
    trace = getattr(request, "trace", None)
    return trace if isinstance(trace, Trace) else None


def trace_ref(trace: Trace | None) -> TraceRef | None:
    """What the services called under `trace` may know of it (None outside a trace)."""
    return trace.ref() if trace is not None else None


def trace_record(trace: Trace | None, *measured: Measured | None) -> None:
    """Record what services measured in `trace`, in the order given (the order they measured
    it); nothing outside a trace."""
    if trace is None:
        return
    for item in measured:
        if item is not None:
            item.record(trace)


@contextlib.contextmanager
def measured_on_failure(*measured: Measured | None) -> Iterator[None]:
    """Keep `measured` on an error raised in the block, ahead of what the block's own services
    kept there: the entry point records it with the error (`measured_of`), as it would have
    recorded the result."""
    try:
        yield
    except Exception as exc:
        kept = [item for item in measured if item is not None]
        setattr(exc, _MEASURED, [*kept, *measured_of(exc)])
        raise


def measured_of(error: BaseException) -> list[Measured]:
    """What the services that raised `error` had measured, oldest first."""
    return list(getattr(error, _MEASURED, ()))


@contextlib.contextmanager
def traced(*, operation: str, channel: str, caller: Any = None) -> Iterator[Trace]:
    """A call of a command or an MCP tool under its own trace, recorded when the block ends
    (as an error when it raises)."""
    trace = trace_begin(operation=operation, channel=channel, caller=caller)
    try:
        yield trace
    except BaseException as exc:
        trace_finish(trace, error=exc)
        raise
    trace_finish(trace)


def trace_discard(trace: Trace | None) -> None:
    """Do not record `trace`: its request searched and answered nothing."""
    if trace is not None:
        trace.discarded = True


def trace_attach(trace: Trace) -> None:
    """Give this context's log lines the trace's id (again): a stream's events are made after
    its request handler left."""
    trace._log_token = trace_id_var.set(trace.id)


def trace_detach(trace: Trace) -> None:
    """Take the trace's id off this context's log lines, restoring the one before it."""
    if trace._log_token is None:
        return
    try:
        trace_id_var.reset(trace._log_token)
    except ValueError:  # attached in another context: nothing of it is set here
        pass
    trace._log_token = None


def trace_finish(trace: Trace, *, error: BaseException | None = None) -> None:
    """Record the trace (never raising: a failed trace write must not fail the answer it
    describes) and take its id off this context's log lines."""
    trace_detach(trace)
    if trace.discarded and error is None:
        return
    if error is not None:
        trace_record(trace, *measured_of(error))
        trace.status = "error"
        trace.error_code = error.code if isinstance(error, LocalRagError) else "internal_error"
    trace.stage("total", (time.perf_counter() - trace.started) * 1000)
    config = get_config()
    keep_text = config.rag_trace_text
    # Priced as the trace is written: a later change of RAG_MODEL_PRICES leaves it as it was.
    cost = llm_cost(prices=config.rag_model_prices, model=trace.llm_model,
                    prompt_tokens=trace.prompt_tokens, completion_tokens=trace.completion_tokens)
    try:
        # In a savepoint: a write that fails leaves a transaction the caller has open usable.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql.TRACE_INSERT, [
                trace.id, trace.operation, trace.channel, trace.caller, trace.user_id,
                trace.token_id, trace.knowledge_base_ids, trace.status, trace.error_code,
                trace.mode, _json_of(trace.parameters), _json_of(trace.timings_ms),
                trace.embedding_model, trace.llm_model, trace.prompt_tokens,
                trace.completion_tokens, trace.token_source, trace.prompt_version,
                _json_of(trace.citations),
                _without_nul(trace.question) if keep_text else None,
                _without_nul(trace.answer) if keep_text else None,
                cost["amount"] if cost else None, cost["currency"] if cost else None])
            if random.randrange(PRUNE_EVERY) == 0:
                cursor.execute(sql.TRACES_PRUNE, [config.rag_trace_retention_days])
    except Exception as exc:  # the database is down, or the table missing: log, go on
        logger.warning("trace %s not recorded: %s: %s", trace.id, type(exc).__name__, exc)


def _without_nul(value: Any) -> Any:
    """`value` with every NUL in its text (keys included) replaced by U+FFFD: PostgreSQL keeps
    none in text or jsonb, and a question may well hold one (/v1/chat/completions takes it)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list | tuple):
        return [_without_nul(item) for item in value]
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    return value


def _json_of(value: Any) -> str:
    return json.dumps(_without_nul(value))


def traces_prune(*, days: int) -> int:
    """Delete the traces older than `days`; returns how many."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TRACES_PRUNE, [days])
        return cursor.rowcount
