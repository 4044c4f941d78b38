"""A local stub OpenAI-compatible server on a real socket, with scripted behaviours.

Set `stub.behaviour` before a request, or `stub.script` to a list of behaviours for the next
requests in turn (then `behaviour` again); every request is recorded in `stub.requests`.

Behaviours:
- "json", "sse": a normal answer (`answer`, or `deltas` then `data: [DONE]`).
- "auto": "sse" for a request with `stream: true`, else "json" (a working server).
- "status:<code>": that status with a JSON error body and `Retry-After: <retry_after>` when
  `retry_after` is set ("0" by default, so retry tests do not sit out a backoff unless they ask).
- "malformed_json", "missing_choices", "sse_malformed": broken answers.
- "hang": nothing for `hang_seconds` (a stall before headers), then an answer.
- "sse_hang": `hang_seconds` of silence after each delta.
- "drip": the headers, then the JSON body one byte every `drip_seconds`.
- "drip_headers": the status line and headers themselves one byte every `drip_seconds`.
- "json_unsized": the JSON answer without Content-Length (read until the connection closes).
- "sse_idle": SSE comments and empty deltas every `drip_seconds`, never any text, never done.
- "sse_slow": a text delta every `drip_seconds`, never done.
- "sse_cut": one text delta, then the connection drops mid-body (a connection error after a
  delta).
- "close": the connection closed without an answer (a connection error).

`usage` (a dict, None by default) goes into the JSON answer and into the stream's trailing
usage-only chunk, which otherwise carries only `total_tokens`. With `refuse_stream_options` a
request that carries `stream_options` is answered 400 naming it, as strict servers do.

`GET /v1/models` lists `models` (with `owned_by`), or as `models_behaviour` says: "json", "html"
(a web page), "not_list" (JSON without `data`), "huge" (`huge_models` entries), "hang" (nothing
for `hang_seconds`) or "status:<code>". With `required_key`, every request without
`Authorization: Bearer <required_key>` is answered 401.

The endless behaviours (drips, "sse_idle", "sse_slow") give up after `give_up_seconds`, so a
client without a working deadline fails a test instead of hanging the run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from tests.stub_http import JsonHandler, ServedStub

DEFAULT_ANSWER = "Stub answer [1]."
DEFAULT_DELTAS = ["Stub ", "streamed ", "answer [1]."]
AFTER_DONE = "AFTER-DONE"


@dataclass
class RecordedRequest:
    """One request as the stub received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = 0.0  # time.monotonic()


@dataclass
class StubOpenAI(ServedStub):
    """Runs the stub in a background thread; use as a context manager."""

    behaviour: str = "json"
    answer: str = DEFAULT_ANSWER
    deltas: list[str] = field(default_factory=lambda: list(DEFAULT_DELTAS))
    hang_seconds: float = 5.0
    drip_seconds: float = 0.25
    give_up_seconds: float = 10.0
    retry_after: str | None = "0"
    usage: dict[str, Any] | None = None
    refuse_stream_options: bool = False
    script: list[str] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    models: list[str] = field(default_factory=lambda: ["stub-model"])
    models_owner: str = "stub-owner"
    models_behaviour: str = "json"
    huge_models: int = 50_000
    required_key: str | None = None

    def __post_init__(self) -> None:
        self.serve(_handler_for(self))

    def hang(self) -> None:
        self._release.wait(self.hang_seconds)

    def pause(self, *, started: float) -> bool:
        """Wait one drip interval; False once the stub is shutting down or giving up."""
        if time.monotonic() - started > self.give_up_seconds:
            return False
        return not self._release.wait(self.drip_seconds)

    def next_behaviour(self) -> str:
        return self.script.pop(0) if self.script else self.behaviour


def _handler_for(stub: StubOpenAI) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            stub.requests.append(RecordedRequest(
                method="GET", path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body={}, received_at=time.monotonic()))
            if not self._key_accepted():
                return
            behaviour = stub.models_behaviour
            if self.path != "/v1/models":
                self._send(404, b'{"error": {"message": "no such route"}}')
            elif behaviour == "json":
                self._send(200, json.dumps({"object": "list", "data": [
                    {"id": model, "object": "model", "owned_by": stub.models_owner}
                    for model in stub.models]}).encode())
            elif behaviour == "html":
                self._send(200, b"<!doctype html><html><body>Web UI</body></html>")
            elif behaviour == "not_list":
                self._send(200, b'{"models": "none"}')
            elif behaviour == "huge":
                entries = ",".join(f'{{"id": "model-{index}", "owned_by": "x"}}'
                                   for index in range(stub.huge_models))
                self._send(200, f'{{"data": [{entries}]}}'.encode())
            elif behaviour == "hang":
                stub.hang()
                self._send(200, b'{"data": []}')
            elif behaviour.startswith("status:"):
                self._send(int(behaviour.split(":", 1)[1]),
                           b'{"error": {"message": "scripted failure"}}')
            else:
                raise ValueError(f"unknown models behaviour {behaviour!r}")

        def _key_accepted(self) -> bool:
            if stub.required_key is None:
                return True
            if self.headers.get("Authorization") == f"Bearer {stub.required_key}":
                return True
            self._send(401, b'{"error": {"message": "invalid api key"}}')
            return False

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            stub.requests.append(RecordedRequest(
                method="POST", path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=json.loads(raw or b"{}"), received_at=time.monotonic()))
            if not self._key_accepted():
                return
            if stub.refuse_stream_options and "stream_options" in stub.requests[-1].body:
                self._send(400, b'{"error": {"message": "Unrecognized request argument '
                                b'supplied: stream_options"}}')
                return
            behaviour = stub.next_behaviour()
            if behaviour == "auto":
                behaviour = "sse" if stub.requests[-1].body.get("stream") else "json"
            if behaviour.startswith("status:"):
                code = int(behaviour.split(":", 1)[1])
                extra = {"Retry-After": stub.retry_after} if stub.retry_after is not None else {}
                self._send(code, b'{"error": {"message": "scripted failure"}}', extra)
            elif behaviour == "json":
                self._send(200, json.dumps(_completion(stub.answer, usage=stub.usage)).encode())
            elif behaviour == "malformed_json":
                self._send(200, b'{"choices": [{"message": ')
            elif behaviour == "missing_choices":
                self._send(200, b'{"id": "x", "object": "chat.completion"}')
            elif behaviour == "hang":
                stub.hang()
                self._send(200, json.dumps(_completion(stub.answer)).encode())
            elif behaviour in ("sse", "sse_malformed", "sse_hang"):
                self._send_sse(behaviour)
            elif behaviour in ("drip", "drip_headers"):
                self._drip(behaviour)
            elif behaviour == "json_unsized":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(json.dumps(_completion(stub.answer)).encode())
                self.close_connection = True
            elif behaviour in ("sse_idle", "sse_slow"):
                self._send_sse_forever(behaviour)
            elif behaviour == "sse_cut":
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                # Promises far more than is sent, so the early close is an error, not an end.
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                self._event({"choices": [{"index": 0, "delta": {"content": stub.deltas[0]}}]})
                self.wfile.flush()
                self.close_connection = True
            elif behaviour == "close":
                self.close_connection = True
            else:
                raise ValueError(f"unknown stub behaviour {behaviour!r}")

        def _drip(self, behaviour: str) -> None:
            body = json.dumps(_completion(stub.answer)).encode()
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n").encode()
            if behaviour == "drip":
                self.wfile.write(head)
                self.wfile.flush()
            slow = head + body if behaviour == "drip_headers" else body
            started = time.monotonic()
            for index in range(len(slow)):
                if not stub.pause(started=started):
                    break
                self.wfile.write(slow[index:index + 1])
                self.wfile.flush()
            self.close_connection = True

        def _send_sse_forever(self, behaviour: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            started = time.monotonic()
            while stub.pause(started=started):
                if behaviour == "sse_slow":
                    self._event({"choices": [{"index": 0, "delta": {"content": "tick "}}]})
                else:
                    self.wfile.write(b": still thinking\n\n")
                    self._event({"choices": [{"index": 0, "delta": {}}]})
                    self._event({"choices": [{"index": 0, "delta": {"content": ""}}]})
                self.wfile.flush()
            self.close_connection = True

        def _send_sse(self, behaviour: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self._event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
            self.wfile.write(b": keep-alive comment\n\n")
            for delta in stub.deltas:
                self._event({"choices": [{"index": 0, "delta": {"content": delta}}]})
                if behaviour == "sse_hang":
                    self.wfile.flush()
                    stub.hang()
            if behaviour == "sse_malformed":
                self.wfile.write(b"data: {not json\n\n")
            self._event({"choices": [{"index": 0, "delta": {"content": None},
                                      "finish_reason": "stop"}]})
            self._event({"choices": [], "usage": stub.usage or {"total_tokens": 3}})
            self.wfile.write(b"data: [DONE]\n\n")
            # Anything after [DONE] must be ignored by the client.
            self._event({"choices": [{"index": 0, "delta": {"content": AFTER_DONE}}]})
            self.wfile.flush()
            self.close_connection = True

        def _event(self, payload: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())

    return Handler


def _completion(answer: str, *, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    completion = {"id": "chatcmpl-stub", "object": "chat.completion",
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                               "finish_reason": "stop"}]}
    if usage is not None:
        completion["usage"] = usage
    return completion
