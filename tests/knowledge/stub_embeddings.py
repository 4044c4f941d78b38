"""A local stub embedding server (`POST .../embeddings`) on a real socket that enforces the
OpenAI embeddings contract and can misbehave on request.

The contract it checks on every request (a breach is answered 400 and kept in `violations`):
`model` equal to `model`, `input` a non-empty list of strings of at most `max_batch`,
`encoding_format: "float"`, `dimensions` equal to `dimensions` when `require_dimensions`, absent
when `refuse_dimensions`, and the bearer key `api_key` when one is set.

Vectors: `stub_vector(text, dimensions)`, a deterministic function of the text (fake-lexical-v1
of it, cut to the dimensions), so a test can compute what must be stored. `data` comes back
shuffled (`shuffle`, on by default): only `index` says which input a vector belongs to.

Set `behaviour` (or `script`, a list used first, one per request):
- "ok";
- "nan": the second vector (or the only one) holds NaN; "text": a number sent as a string;
  "short": one value too few;
  "zero": all zeros; "repeated_index": the first item twice, the last left out;
- "status:<code>": that status with `Retry-After: <retry_after>` when set.
Every request sleeps `delay_seconds` first (a server's fixed time per batch), one request at a
time with `serial` (one accelerator working through its queue); `in_flight_max` is the most
requests it was ever serving at once.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from embeddings.fake import FakeLexicalEmbedder
from tests.stub_http import JsonHandler, ServedStub


def stub_vector(text: str, dimensions: int) -> list[float]:
    """What the stub answers for `text`: never all zeros (the first value is at least 0.01)."""
    vector = FakeLexicalEmbedder().embed_query(text)[:dimensions]
    return [vector[0] + 0.01, *vector[1:]]


@dataclass
class StubEmbeddings(ServedStub):
    """Runs the stub in a background thread; use as a context manager."""

    model: str = "stub-embed"
    dimensions: int = 1024
    require_dimensions: bool = True
    refuse_dimensions: bool = False
    max_batch: int = 10
    api_key: str = ""
    behaviour: str = "ok"
    script: list[str] = field(default_factory=list)
    retry_after: str | None = None
    delay_seconds: float = 0.0
    serial: bool = False
    shuffle: bool = True
    seed: int = 11
    requests: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    in_flight_max: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._device = threading.Lock()  # `serial`: the one batch being computed
        self._in_flight = 0
        self._random = random.Random(self.seed)
        self.serve(_handler_for(self))

    @property
    def texts(self) -> list[str]:
        """Every input received, in the order of the requests."""
        return [text for body in self.requests for text in body.get("input", [])]

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes, dict]:
        """(status, body, extra headers) for one request."""
        with self._lock:
            self.requests.append(body)
            behaviour = self.script.pop(0) if self.script else self.behaviour
        breach = self._breach(body, headers)
        if breach:
            with self._lock:
                self.violations.append(breach)
            return 400, json.dumps({"error": {"message": breach}}).encode(), {}
        if behaviour.startswith("status:"):
            extra = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
            return int(behaviour.split(":", 1)[1]), b'{"error": {"message": "scripted"}}', extra
        size = body.get("dimensions", self.dimensions)
        data = [{"object": "embedding", "index": index, "embedding": stub_vector(text, size)}
                for index, text in enumerate(body["input"])]
        if behaviour == "nan":
            data[min(1, len(data) - 1)]["embedding"][3] = float("nan")
        elif behaviour == "short":
            data[-1]["embedding"] = data[-1]["embedding"][:-1]
        elif behaviour == "text":
            data[0]["embedding"][2] = "0.5"
        elif behaviour == "zero":
            data[0]["embedding"] = [0.0] * size
        elif behaviour == "repeated_index":
            data[-1] = dict(data[0])
        elif behaviour != "ok":
            raise ValueError(f"unknown stub behaviour {behaviour!r}")
        if self.shuffle:
            with self._lock:
                self._random.shuffle(data)
        # json.dumps writes NaN as the bare `NaN` token, as a broken server would.
        return 200, json.dumps({"object": "list", "model": body["model"], "data": data,
                                "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode(), {}

    def _breach(self, body: dict[str, Any], headers: dict[str, str]) -> str:
        texts = body.get("input")
        if self.api_key and headers.get("authorization") != f"Bearer {self.api_key}":
            return "missing or wrong bearer key"
        if body.get("model") != self.model:
            return f"model {body.get('model')!r} is not {self.model!r}"
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return "input must be a non-empty list of strings"
        if len(texts) > self.max_batch:
            return f"batch of {len(texts)} is over the limit of {self.max_batch}"
        if body.get("encoding_format") != "float":
            return "encoding_format must be float"
        if self.refuse_dimensions and "dimensions" in body:
            return "this model does not take dimensions"
        if self.require_dimensions and body.get("dimensions") != self.dimensions:
            return f"dimensions {body.get('dimensions')!r} is not {self.dimensions}"
        return ""

    def compute(self) -> None:
        """The server's fixed time for one batch, behind the others' with `serial`."""
        if self.serial:
            with self._device:
                time.sleep(self.delay_seconds)
        else:
            time.sleep(self.delay_seconds)

    def serving(self, change: int) -> None:
        with self._lock:
            self._in_flight += change
            self.in_flight_max = max(self.in_flight_max, self._in_flight)


def _handler_for(stub: StubEmbeddings) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:
            stub.serving(+1)
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if stub.delay_seconds:
                    stub.compute()
                if not self.path.endswith("/embeddings"):
                    status, payload, extra = 404, b'{"error": {"message": "no such path"}}', {}
                else:
                    status, payload, extra = stub.answer(
                        body, {name.lower(): value for name, value in self.headers.items()})
            finally:
                stub.serving(-1)
            self._send(status, payload, extra)

    return Handler


def main() -> None:
    """Serve one stub until killed, in a process of its own (bench/embedding_servers.py): its
    base URL on the first line of stdout."""
    import argparse

    parser = argparse.ArgumentParser(description="a stub OpenAI-compatible embedding server")
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--serial", action="store_true")
    parser.add_argument("--max-batch", type=int, default=10)
    args = parser.parse_args()
    with StubEmbeddings(delay_seconds=args.delay_ms / 1000, serial=args.serial,
                        max_batch=args.max_batch) as stub:
        print(stub.base_url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
