"""What the local stub servers of upstream services share (tests/answering/stub_openai.py,
tests/retrieval/stub_rerank.py, tests/knowledge/stub_embeddings.py): a threaded server that
stays quiet about clients that hang up, a handler base that answers JSON, and the serving of a
stub from a background thread while it is entered."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout tests) leaves a broken pipe; anything else is a bug.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def _send(self, status: int, body: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class ServedStub:
    """A stub served on 127.0.0.1 from a background thread while it is entered: its dataclass
    calls `serve(handler)` from __post_init__. `_release` wakes handlers that hang on purpose,
    so leaving is prompt."""

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._release = threading.Event()
        self._server = QuietServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        # A short poll interval keeps shutdown (once per test) fast.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
