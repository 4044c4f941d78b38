"""A local stub rerank server (`POST .../reranks`) on a real socket, with scripted behaviours.

Set `stub.behaviour` before a request, or `stub.script` to a list of behaviours for the next
requests in turn (then `behaviour` again); every request is recorded in `stub.requests`, and the
last answer's results, in the order sent, in `stub.last_results`.

Behaviours:
- "ok": each document scored by `stub_score` (the share of the query's words it contains), the
  best `top_n` kept, then shuffled, so only `index` says which document a score belongs to.
- "mislabelled": as "ok", but each result's `document.text` is another document's text.
- "status:<code>": that status with a JSON error body and `Retry-After: <retry_after>` when
  `retry_after` is set ("0" by default, so retry tests do not sit out a backoff unless they ask).
- "slow": nothing for `hang_seconds` (past any short deadline), then an "ok" answer.
- "malformed_json": a 200 whose body is cut-off JSON.
- "bad_index": an "ok" answer plus a result for a document that was not sent.
- "repeated_index": an "ok" answer with the first result sent twice.
- "close": the connection closed without an answer (a connection error).
"""

from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

from tests.stub_http import JsonHandler, ServedStub

_WORD = re.compile(r"[a-z0-9]+")


def stub_score(query: str, document: str) -> float:
    """The share of the query's distinct words found in the document (the stub's relevance)."""
    words = set(_WORD.findall(query.lower()))
    return len(words & set(_WORD.findall(document.lower()))) / len(words) if words else 0.0


@dataclass
class RecordedRequest:
    """One request as the stub received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = 0.0  # time.monotonic()


@dataclass
class StubRerank(ServedStub):
    """Runs the stub in a background thread; use as a context manager."""

    behaviour: str = "ok"
    hang_seconds: float = 5.0
    retry_after: str | None = "0"
    seed: int = 7
    script: list[str] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    last_results: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.serve(_handler_for(self))

    def hang(self) -> None:
        self._release.wait(self.hang_seconds)

    def next_behaviour(self) -> str:
        return self.script.pop(0) if self.script else self.behaviour

    def results(self, body: dict[str, Any], *, mislabelled: bool = False) -> list[dict[str, Any]]:
        documents = body["documents"]
        scored = sorted(range(len(documents)),
                        key=lambda index: -stub_score(body["query"], documents[index]))
        kept = scored[:body.get("top_n", len(documents))]
        random.Random(self.seed).shuffle(kept)
        return [{"index": index,
                 "relevance_score": stub_score(body["query"], documents[index]),
                 "document": {"text": documents[(index + mislabelled) % len(documents)]}}
                for index in kept]


def _handler_for(stub: StubRerank) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            stub.requests.append(RecordedRequest(
                method="POST", path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body, received_at=time.monotonic()))
            behaviour = stub.next_behaviour()
            if behaviour.startswith("status:"):
                code = int(behaviour.split(":", 1)[1])
                extra = {"Retry-After": stub.retry_after} if stub.retry_after is not None else {}
                self._send(code, b'{"error": {"message": "scripted failure"}}', extra)
            elif behaviour in ("ok", "mislabelled", "slow", "bad_index", "repeated_index"):
                if behaviour == "slow":
                    stub.hang()
                results = stub.results(body, mislabelled=behaviour == "mislabelled")
                if behaviour == "bad_index":
                    results.append({"index": len(body["documents"]), "relevance_score": 0.5})
                elif behaviour == "repeated_index":
                    results.append(dict(results[0]))
                stub.last_results = results
                self._send(200, json.dumps({"id": "rerank-stub", "model": body.get("model"),
                                            "results": results}).encode())
            elif behaviour == "malformed_json":
                self._send(200, b'{"results": [{"index": 0, "relevance_')
            elif behaviour == "close":
                self.close_connection = True
            else:
                raise ValueError(f"unknown stub behaviour {behaviour!r}")

    return Handler
