"""The `openai-compatible` embedder: `POST {EMBEDDING_BASE_URL}/embeddings` over httpx, to one
embedding server or several (Text Embeddings Inference, vLLM, Ollama, Infinity, a cloud model).

Request: `{"model", "input": [texts], "encoding_format": "float"[, "dimensions"]}`, at most
EMBEDDING_REMOTE_BATCH_SIZE texts, each cut to EMBEDDING_MAX_INPUT_TOKENS tokens first (counted
with cl100k_base, the chunker's tokenizer; a server whose own tokenizer counts more should
truncate itself, e.g. TEI's `--auto-truncate`, or get a lower setting). Response: `{"data":
[{"index", "embedding"}, ...]}`; each vector goes back to its text by `index` alone, never by
its position in `data`, and every index must come exactly once. Every vector is checked before
anything is stored: EMBEDDING_DIMENSIONS numbers, all finite, not all zero. It is then scaled to
unit length and zero-padded to the schema's 1,024 dimensions (neither changes a cosine). A vector
that fails the check stands for that input alone: ingest gets VectorRefused in its place, skips
that chunk's vector and goes on (knowledge/ingest.py). An answer in which every vector of a
batch of several fails is a broken server, and fails the call, as a question's bad vector does.

Each request keeps one wall-clock deadline of EMBEDDING_TIMEOUT_SECONDS and retries within it,
up to EMBEDDING_MAX_RETRIES times, by the rules every OpenAI-compatible client shares
(core/http_client.py): 401/403 fail at once, 429 waits for the server's Retry-After, 5xx and
dropped connections back off; the API key stays out of errors, reprs and logs. A document batch
that still meets 429 once its retries are spent is sent again after the server's Retry-After,
as long as the server sends one and the waits stay within RATE_LIMIT_PATIENCE_SECONDS and
RATE_LIMIT_ROUNDS per batch: a burst the server asks us to wait out does not fail an ingest.

Throughput: a call's batches go into one queue that EMBEDDING_MAX_CONCURRENCY threads per server
take from, so every server stays busy and a faster one simply takes more batches. The same
per-server cap also holds for questions embedded beside an ingest in this process.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from core.config import EMBEDDING_DIM, Config
from core.errors import LocalRagError
from core.http_client import OpenAICompatibleHTTP, UpstreamService, upstream_malformed
from core.http_deadlines import Deadline
from core.http_retries import retry_after_seconds
from core.text_tokens import get_encoding
from embeddings.base import ChunkText, Embedded, VectorRefused
from embeddings.local import document_text
from embeddings.outbound import endpoint_host, endpoint_is_local, outbound_record

logger = logging.getLogger("localrag.embeddings")

ENDPOINT = "/embeddings"
# The longest a document batch waits out a server's 429s (by its Retry-After) once the
# request's own retries are spent; longer, and the ingest fails with embedding_rate_limited.
RATE_LIMIT_PATIENCE_SECONDS = 300.0
RATE_LIMIT_ROUNDS = 10  # and at most this many times (a server may ask for no wait at all)
# Room for one number of a vector as JSON (`-0.012345678901234567,` is 22 bytes) and the
# envelope: the answer cap grows with the batch and the dimensions asked for.
_BYTES_PER_NUMBER = 32
_ENVELOPE_BYTES = 64 * 1024


class EmbeddingTimeout(LocalRagError):
    code = "embedding_timeout"


class EmbeddingAuthFailed(LocalRagError):
    code = "embedding_auth_failed"


class EmbeddingRateLimited(LocalRagError):
    code = "embedding_rate_limited"


class EmbeddingUpstreamError(LocalRagError):
    code = "embedding_upstream_error"


class EmbeddingUnavailable(LocalRagError):
    code = "embedding_unavailable"


EMBEDDING_SERVICE = UpstreamService(
    name="embedding", url_setting="EMBEDDING_BASE_URL", key_setting="EMBEDDING_API_KEY",
    timeout_setting="EMBEDDING_TIMEOUT_SECONDS", timeout=EmbeddingTimeout,
    auth_failed=EmbeddingAuthFailed, rate_limited=EmbeddingRateLimited,
    upstream_error=EmbeddingUpstreamError, unavailable=EmbeddingUnavailable)

# Requests in flight per server URL, for the whole process: ingest batches and questions alike.
_slots: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


def _slot(url: str, size: int) -> threading.BoundedSemaphore:
    with _slots_lock:
        return _slots.setdefault((url, size), threading.BoundedSemaphore(size))


class EmbeddingServer(OpenAICompatibleHTTP):
    """One embedding server: a batch of texts in, their checked vectors out, in input order."""

    service = EMBEDDING_SERVICE

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout_seconds: float,
                 max_retries: int, dimensions: int, send_dimensions: bool, batch_size: int,
                 max_concurrency: int) -> None:
        super().__init__(url=f"{base_url.rstrip('/')}{ENDPOINT}", model=model, api_key=api_key,
                         timeout_seconds=timeout_seconds, max_retries=max_retries,
                         max_response_bytes=_ENVELOPE_BYTES
                         + batch_size * dimensions * _BYTES_PER_NUMBER, logger=logger)
        self.dimensions = dimensions
        self.send_dimensions = send_dimensions
        self.max_concurrency = max_concurrency

    def embed(self, texts: Sequence[str]) -> list[Embedded]:
        body: dict[str, Any] = {"model": self.model, "input": list(texts),
                                "encoding_format": "float"}
        if self.send_dimensions:
            body["dimensions"] = self.dimensions
        # The wait for a slot is not the server's time: the deadline starts once one is held.
        with _slot(self.url, self.max_concurrency):
            deadline = Deadline(seconds=self.timeout_seconds)
            raw = self.with_retries(lambda attempt: self.post_read(body, deadline=attempt),
                                    deadline=deadline)
        return self._vectors(raw, count=len(body["input"]))

    def _vectors(self, raw: bytes, *, count: int) -> list[Embedded]:
        """The answer's vectors placed by their `index`, each checked, unit length, padded;
        VectorRefused for one that is no vector, unless all of several are."""
        try:
            data = json.loads(raw)["data"]
        except (ValueError, KeyError, TypeError):
            raise self._malformed("the embedding answer is not JSON with a `data` list") from None
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise self._malformed(f"the embedding server answered {got} vectors for {count} "
                                  "inputs")
        placed: list[Embedded | None] = [None] * count
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            if type(index) is not int or not 0 <= index < count:
                raise self._malformed(f"an embedding answer item has index {index!r}, not one "
                                      f"of 0..{count - 1}")
            if placed[index] is not None:
                raise self._malformed(f"the embedding answer holds index {index} twice")
            placed[index] = self._checked(item.get("embedding"), index=index)
        vectors = [vector for vector in placed if vector is not None]
        refused = [vector for vector in vectors if isinstance(vector, VectorRefused)]
        if refused and len(refused) == len(vectors) > 1:
            raise self._malformed(f"every vector of the answer is unusable ({refused[0].reason})",
                                  reason="vector_invalid")
        for vector in refused:
            self.logger.warning("embedding server %s: %s", self._display_url, vector.reason)
        return vectors

    def _checked(self, vector: Any, *, index: int) -> Embedded:
        if not isinstance(vector, list) or len(vector) != self.dimensions:
            size = len(vector) if isinstance(vector, list) else type(vector).__name__
            return VectorRefused(f"the vector of input {index} has {size} dimensions, not the "
                                 f"{self.dimensions} of EMBEDDING_DIMENSIONS")
        # numpy: a batch is thousands of numbers, checked and scaled per answer. Imported here:
        # every `rag` command loads the provider table, and most never embed remotely.
        import numpy

        try:
            values = numpy.asarray(vector)
        except ValueError:  # ragged: a list inside the list
            values = None
        # Only numbers (kind i/u/f; strings, booleans, objects and nesting are not a vector).
        if values is None or values.ndim != 1 or values.dtype.kind not in "iuf" \
                or not numpy.isfinite(values).all():
            return VectorRefused(f"the vector of input {index} holds a value that is not a "
                                 "finite number")
        values = values.astype(numpy.float64)
        norm = float(numpy.sqrt(numpy.dot(values, values)))
        if norm == 0:
            return VectorRefused(f"the vector of input {index} is all zeros")
        return (values / norm).tolist() + [0.0] * (EMBEDDING_DIM - self.dimensions)

    def _malformed(self, message: str, *, reason: str = "malformed_response") -> LocalRagError:
        return upstream_malformed(self.service, message, logger=self.logger, reason=reason)


class OpenAICompatibleEmbedder:
    """Embeds through the servers of EMBEDDING_BASE_URL (see the module)."""

    provider = "openai-compatible"
    dim = EMBEDDING_DIM
    # The work is the servers'; threads here keep them busy, worker processes would add nothing.
    runs_in_workers = False

    def __init__(self, *, config: Config) -> None:
        self.model = config.embedding_model
        self.native_dim = config.embedding_dimensions
        self.batch_size = config.embedding_remote_batch_size
        self.max_input_tokens = config.embedding_max_input_tokens
        self.query_instruction = config.embedding_query_instruction
        self.servers = [EmbeddingServer(
            base_url=url, model=config.embedding_model, api_key=config.embedding_api_key,
            timeout_seconds=config.embedding_timeout_seconds,
            max_retries=config.embedding_max_retries, dimensions=config.embedding_dimensions,
            send_dimensions=config.embedding_send_dimensions, batch_size=self.batch_size,
            max_concurrency=config.embedding_max_concurrency)
            for url in config.embedding_base_urls]
        self._next_server = itertools.count()
        self._config = config
        self._sent_lock = threading.Lock()
        # Texts and bytes sent per endpoint host outside this machine (embeddings/outbound.py),
        # since this embedder was built: an ingest keeps them in its run's summary.
        self.sent: dict[str, dict[str, int]] = {}

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder(model={self.model!r}, servers={self.servers!r})"

    def embed_documents(self, chunks: Sequence[ChunkText]) -> list[Embedded]:
        """One vector per chunk (VectorRefused for one the server answered no vector for), in
        the chunks' order, the batches spread over the servers."""
        texts = [self._fit(document_text(chunk)) for chunk in chunks]
        batches = deque(range(start, min(start + self.batch_size, len(texts)))
                        for start in range(0, len(texts), self.batch_size))
        vectors: list[Embedded] = [[] for _ in texts]
        if len(batches) <= 1:
            for batch in batches:
                vectors[batch.start:batch.stop] = self._embed(
                    self._server(), texts[batch.start:batch.stop], patient=True)
            return vectors
        lock = threading.Lock()
        failed = threading.Event()
        errors: list[BaseException] = []

        def work(server: EmbeddingServer) -> None:
            while not failed.is_set():
                with lock:
                    if not batches:
                        return
                    batch = batches.popleft()
                try:
                    vectors[batch.start:batch.stop] = self._embed(
                        server, texts[batch.start:batch.stop], patient=True)
                except BaseException as exc:  # handed to the caller below
                    errors.append(exc)
                    failed.set()
                    return

        workers = [server for server in self.servers
                   for _ in range(min(server.max_concurrency, len(batches)))]
        with ThreadPoolExecutor(max_workers=len(workers),
                                thread_name_prefix="embedding") as pool:
            for future in [pool.submit(work, server) for server in workers]:
                future.result()
        if errors:
            raise errors[0]
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """The vector of a question, EMBEDDING_QUERY_INSTRUCTION before it; a server outside
        this machine is kept in `query_sent` for the search to return with what it measured
        (a question is no base's text, so no policy stops it)."""
        server = self._server()
        sent = self._fit(self.query_instruction + text)
        vector = self._embed(server, [sent])[0]
        if isinstance(vector, VectorRefused):  # a question has no other vector to fall back on
            raise server._malformed(vector.reason, reason="vector_invalid")
        self.query_sent = outbound_record(config=self._config, url=server.url,
                                          what="question embedding", texts=[sent])
        return vector

    def _server(self) -> EmbeddingServer:
        return self.servers[next(self._next_server) % len(self.servers)]

    def _embed(self, server: EmbeddingServer, texts: list[str], *,
               patient: bool = False) -> list[Embedded]:
        """The server's vectors of `texts`; `patient` (a document batch): a 429 that outlasts
        the request's retries is waited out as the server's Retry-After asks, within
        RATE_LIMIT_PATIENCE_SECONDS."""
        waited, rounds = 0.0, 0
        while True:
            try:
                vectors = server.embed(texts)
                break
            except EmbeddingRateLimited as exc:
                delay = retry_after_seconds(headers={name.lower(): value
                                                     for name, value in exc.headers.items()})
                rounds += 1
                if not patient or delay is None or rounds > RATE_LIMIT_ROUNDS \
                        or waited + delay > RATE_LIMIT_PATIENCE_SECONDS:
                    raise
                logger.warning("embedding server %s is still rate limiting after its retries; "
                               "waiting %.1fs as it asks", server._display_url, delay)
                time.sleep(delay)
                waited += delay
        if not endpoint_is_local(server.url, config=self._config):
            with self._sent_lock:
                host = self.sent.setdefault(endpoint_host(server.url), {"texts": 0, "bytes": 0})
                host["texts"] += len(texts)
                host["bytes"] += sum(len(text.encode()) for text in texts)
        return vectors

    def _fit(self, text: str) -> str:
        """`text` cut to EMBEDDING_MAX_INPUT_TOKENS tokens (a token is at least one byte, so
        a text of no more bytes than that is never encoded)."""
        if len(text.encode()) <= self.max_input_tokens:
            return text
        tokens = get_encoding().encode(text, disallowed_special=())
        if len(tokens) <= self.max_input_tokens:
            return text
        return get_encoding().decode(tokens[:self.max_input_tokens])


def remote_embedder(*, config: Config) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(config=config)


def remote_embedder_status(*, config: Config) -> str:
    """`ok`: the settings were checked when the configuration loaded; whether a server answers
    is only known when it is asked (no request is made for a status)."""
    return "ok" if config.embedding_base_urls and config.embedding_model else "config_missing"
