"""Server-Sent Events as the answer streams send them: `/ask/stream` and the workbench's."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from django.http import StreamingHttpResponse

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"


class Closable(Protocol):
    def close(self) -> None: ...


def sse_frame(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


class SSEFrames:
    """`events` as SSE frames. Django calls `close()` when the response ends (done, or the
    client went away), which closes `closes` — the answer's stream, releasing its LLM slot."""

    def __init__(self, events: Iterable[tuple[str, dict[str, Any]]], *, closes: Closable) -> None:
        self._events = events
        self._closes = closes

    def __iter__(self) -> Iterator[str]:
        for name, data in self._events:
            yield sse_frame(name, data)

    def close(self) -> None:
        self._closes.close()


def sse_response(frames: SSEFrames) -> StreamingHttpResponse:
    """The streaming response of `frames`, unbuffered by proxies."""
    response = StreamingHttpResponse(frames, content_type=SSE_CONTENT_TYPE)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
