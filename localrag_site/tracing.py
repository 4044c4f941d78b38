"""Every /search, /ask and /ask/stream request runs under a trace (knowledge/traces.py): its id
goes back as the X-Request-ID header (and as `trace_id` in the JSON body), and the trace is
recorded when the response is complete — for a stream, when its last event has been sent or
the client went away."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.http import HttpRequest, HttpResponse

from knowledge.traces import Trace, trace_begin, trace_finish

TRACED = {"/search": "search", "/ask": "ask", "/ask/stream": "ask_stream"}
REQUEST_ID_HEADER = "X-Request-ID"


class TraceMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        operation = TRACED.get(request.path.rstrip("/"))
        if operation is None or request.method != "POST":
            return self.get_response(request)
        trace = trace_begin(operation=operation, channel="api")
        try:
            response = self.get_response(request)
        except BaseException as exc:
            trace.caller_set(getattr(request, "auth", None))
            trace_finish(trace, error=exc)
            raise
        response[REQUEST_ID_HEADER] = trace.id
        trace.caller_set(getattr(request, "auth", None))
        if response.status_code >= 400:
            trace.status, trace.error_code = "error", _error_code(response)
        if response.streaming:
            response.streaming_content = _finished_after(response.streaming_content, trace)
        else:
            trace_finish(trace)
        return response


def _finished_after(content: Iterator[bytes], trace: Trace) -> Iterator[bytes]:
    try:
        yield from content
    finally:
        trace_finish(trace)


def _error_code(response: HttpResponse) -> str | None:
    try:
        return json.loads(response.content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
