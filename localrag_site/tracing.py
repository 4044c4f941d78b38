"""Every /search, /ask and /ask/stream request (and the workbench's asks, questions in its
conversations and retrieval-lab runs, and /v1/chat/completions) runs under a trace
(traces/recording.py): its id
goes back as the X-Request-ID header (and as `trace_id` in the JSON body), and the trace is
recorded when the response is complete — for a stream, when its last event has been sent or
the client went away. The view finds its trace on the request (traces/recording.py
`trace_of`) and records in it what the services it called measured."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse

from traces.recording import Trace, trace_attach, trace_begin, trace_detach, trace_finish

# path -> (operation, channel)
TRACED = {"/search": ("search", "api"), "/ask": ("ask", "api"),
          "/ask/stream": ("ask_stream", "api"),
          "/workbench/ask": ("ask", "workbench"),
          "/workbench/ask/stream": ("ask_stream", "workbench"),
          "/workbench/lab/run": ("search", "workbench"),
          # The OpenAI-compatible endpoint: a stream says so in its body, and the service
          # makes the operation ask_stream then (conversations/openai_chat.py).
          "/v1/chat/completions": ("ask", "openai")}
# Paths with an id in them: a question in a conversation (conversations/api.py), and starting
# one, which may ask its first question (a conversation started without one is not traced);
# in the workbench, a question asked in a thread (workbench/views/conversations.py).
TRACED_PATTERNS = ((re.compile(r"/conversations/\d+/messages"), ("ask", "api")),
                   (re.compile(r"/conversations/\d+/messages/stream"), ("ask_stream", "api")),
                   (re.compile(r"/conversations"), ("ask", "api")),
                   (re.compile(r"/workbench/conversations/\d+"), ("ask", "workbench")),
                   (re.compile(r"/workbench/conversations/\d+/stream"),
                    ("ask_stream", "workbench")))
REQUEST_ID_HEADER = "X-Request-ID"


def traced_operation(path: str) -> tuple[str, str] | None:
    """(operation, channel) of a POST to `path`, or None when it is not traced."""
    path = path.rstrip("/")
    found = TRACED.get(path)
    if found is not None:
        return found
    return next((traced for pattern, traced in TRACED_PATTERNS if pattern.fullmatch(path)),
                None)


class TraceMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        traced = traced_operation(request.path)
        if traced is None or request.method != "POST":
            return self.get_response(request)
        operation, channel = traced
        trace = trace_begin(operation=operation, channel=channel)
        request.trace = trace  # type: ignore[attr-defined]  # what trace_of(request) reads
        try:
            response = self.get_response(request)
        except BaseException as exc:
            trace.caller_set(getattr(request, "auth", None))
            trace_finish(trace, error=exc)
            raise
        if channel == "workbench" and response.status_code in (302, 401, 403):
            # Not signed in, or a refused form: nothing was searched or answered.
            trace_detach(trace)
            return response
        response[REQUEST_ID_HEADER] = trace.id
        trace.caller_set(getattr(request, "auth", None))
        if response.status_code >= 400:
            # A workbench page is HTML: keep the code its view put on the trace.
            trace.status = "error"
            trace.error_code = _error_code(response) or trace.error_code
        if response.streaming:
            # The events are made later, as the server sends them: log lines carry the trace's
            # id while each is made (the view's wrapper records what they measured), and the
            # trace is recorded when the last was sent or the response was closed.
            trace_detach(trace)
            response.streaming_content = _TracedStream(response.streaming_content, trace)
        else:
            trace_finish(trace)
        return response


class _TracedStream:
    def __init__(self, content: Iterator[bytes], trace: Trace) -> None:
        self._content = iter(content)
        self._trace = trace
        self._finished = False

    def __iter__(self) -> _TracedStream:
        return self

    def __next__(self) -> bytes:
        trace_attach(self._trace)
        try:
            return next(self._content)
        except StopIteration:
            self.close()
            raise
        finally:
            trace_detach(self._trace)

    def close(self) -> None:
        """Called by the server when the response ends (sent, or the client went away)."""
        if not self._finished:
            self._finished = True
            trace_finish(self._trace)


def _error_code(response: HttpResponse) -> str | None:
    try:
        return json.loads(response.content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
