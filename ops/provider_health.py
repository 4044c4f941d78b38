"""The model servers' health for operators (`GET /providers/health`, the status page): one
minimal live call to each configured server — the LLM lists its models (answering/llm_health.py,
which spends no tokens), each embedding server embeds one short text, the rerank server ranks two
short documents. A provider that runs in this process (fake, local models, features) is `local`
and is not called.

The calls are made through the adapters themselves (core/http_client.py), so a probe meets the
same circuit breaker as real traffic: an open breaker reads `down` with its `*_unavailable` code
without a request, and a probe that succeeds half-open closes it.

Each entry is cached per process for HEALTH_TTL_SECONDS, per configuration (keys included, as a
digest kept in memory only): a page polled every few seconds costs each server one request a
minute. The probes run at once in a small thread pool with PROBE_TIMEOUT_SECONDS each, and the
caller waits at most a little longer: a probe still running then reads `down` with the
service's `*_timeout` code. The text sent is fixed ("health check"), never a document's.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from answering.llm_health import HEALTH_PROBE_TIMEOUT_SECONDS, HEALTH_TTL_SECONDS, llm_health
from core.config import Config
from core.db import connection_released
from core.errors import LocalRagError
from embeddings.providers import embedding_remote_urls
from embeddings.remote import EmbeddingServer
from retrieval.rerank.base import RerankCandidate
from retrieval.rerank.remote import OpenAICompatibleReranker

PROBE_TIMEOUT_SECONDS = HEALTH_PROBE_TIMEOUT_SECONDS
_WAIT_MARGIN_SECONDS = 0.8  # past the probes' own timeout: a host name's lookup has none
PROBE_TEXT = "health check"
_ENTRIES_KEPT = 16


@dataclass(frozen=True)
class ProviderHealth:
    """One model server (or in-process provider) as `GET /providers/health` reports it."""

    kind: str  # llm, embedding or rerank
    provider: str
    model: str
    status: str  # up, down or local
    latency_ms: int | None = None
    error_code: str | None = None
    checked_at: datetime | None = None  # None: not called (local)
    message: str = ""  # what the error says: for operators on the status page, not for the API

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "provider": self.provider, "model": self.model,
                "status": self.status, "latency_ms": self.latency_ms,
                "error_code": self.error_code,
                "checked_at": self.checked_at.isoformat() if self.checked_at else None}


_cache: dict[str, tuple[float, list[ProviderHealth]]] = {}
_lock = threading.Lock()
_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="provider-health")


def providers_health(*, config: Config, ttl_seconds: float = HEALTH_TTL_SECONDS
                     ) -> list[ProviderHealth]:
    """The LLM, every embedding server and the reranker, probed at most once per `ttl_seconds`
    per configuration and process (see the module)."""
    key = _cache_key(config)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < ttl_seconds:
            return cached[1]
    probes: list[tuple[Callable[[], ProviderHealth], ProviderHealth]] = [
        (lambda: _llm_entry(config), _timed_out("llm", config.llm_provider, config.llm_model,
                                                "llm_timeout"))]
    urls = embedding_remote_urls(config=config)
    if not urls:
        probes.append((lambda: ProviderHealth(kind="embedding", provider=config.embedding_provider,
                                              model=config.embedding_model, status="local"),
                       _timed_out("embedding", config.embedding_provider,
                                  config.embedding_model, "embedding_timeout")))
    for url in urls:
        probes.append((_embedding_probe(config, url),
                       _timed_out("embedding", config.embedding_provider,
                                  config.embedding_model, "embedding_timeout")))
    probes.append((lambda: _rerank_entry(config),
                   _timed_out("rerank", config.rag_rerank, config.rerank_model,
                              "rerank_timeout")))
    futures: list[Future[ProviderHealth]] = [_pool.submit(probe) for probe, _ in probes]
    # Waiting on model servers: no database connection is held meanwhile.
    with connection_released():
        futures_wait(futures, timeout=PROBE_TIMEOUT_SECONDS + _WAIT_MARGIN_SECONDS)
    entries = [future.result() if future.done() else late
               for future, (_, late) in zip(futures, probes, strict=True)]
    with _lock:
        _cache[key] = (time.monotonic(), entries)
        while len(_cache) > _ENTRIES_KEPT:
            del _cache[next(iter(_cache))]
    return entries


def providers_health_cache_clear() -> None:
    """Forget every cached result (tests; the LLM's own cache is answering/llm_health.py's)."""
    with _lock:
        _cache.clear()


def _llm_entry(config: Config) -> ProviderHealth:
    health = llm_health(config=config)
    return ProviderHealth(kind="llm", provider=health.provider, model=health.model,
                          status=health.status, latency_ms=health.latency_ms,
                          error_code=health.error, checked_at=health.checked_at)


def _embedding_probe(config: Config, url: str) -> Callable[[], ProviderHealth]:
    return lambda: _embedding_entry(config, url)


def _embedding_entry(config: Config, url: str) -> ProviderHealth:
    server = EmbeddingServer(
        base_url=url, model=config.embedding_model, api_key=config.embedding_api_key,
        timeout_seconds=min(PROBE_TIMEOUT_SECONDS, config.embedding_timeout_seconds),
        max_retries=0, dimensions=config.embedding_dimensions,
        send_dimensions=config.embedding_send_dimensions, batch_size=1, max_concurrency=1)
    return _called("embedding", config.embedding_provider, config.embedding_model,
                   lambda: server.embed([PROBE_TEXT]))


def _rerank_entry(config: Config) -> ProviderHealth:
    if config.rag_rerank != "openai-compatible":
        return ProviderHealth(kind="rerank", provider=config.rag_rerank,
                              model=config.rerank_model if config.rag_rerank == "cross-encoder"
                              else "", status="local")
    reranker = OpenAICompatibleReranker(
        base_url=config.rerank_base_url, model=config.rerank_model,
        api_key=config.rerank_api_key,
        timeout_seconds=min(PROBE_TIMEOUT_SECONDS, config.rerank_timeout_seconds),
        max_retries=0)
    candidates = [RerankCandidate(chunk_id=rank, content=text, heading_path=(),
                                  relative_path="health-check.md", fused_rank=rank)
                  for rank, text in enumerate((PROBE_TEXT, "an unrelated document"), start=1)]
    return _called("rerank", config.rag_rerank, config.rerank_model,
                   lambda: reranker.rerank(query=PROBE_TEXT, candidates=candidates))


def _called(kind: str, provider: str, model: str, call: Callable[[], object]) -> ProviderHealth:
    checked_at = datetime.now(UTC)
    started = time.monotonic()
    try:
        call()
    except LocalRagError as exc:
        return ProviderHealth(kind=kind, provider=provider, model=model, status="down",
                              error_code=exc.code, checked_at=checked_at, message=exc.message)
    return ProviderHealth(kind=kind, provider=provider, model=model, status="up",
                          latency_ms=round((time.monotonic() - started) * 1000),
                          checked_at=checked_at)


def _timed_out(kind: str, provider: str, model: str, code: str) -> ProviderHealth:
    return ProviderHealth(kind=kind, provider=provider, model=model, status="down",
                          error_code=code, checked_at=datetime.now(UTC),
                          message=f"no answer within {PROBE_TIMEOUT_SECONDS:g}s")


def _cache_key(config: Config) -> str:
    # The keys go in as a digest only: a new key is a new configuration to probe.
    parts = (config.llm_provider, config.llm_base_url, config.llm_model, config.llm_api_key,
             config.embedding_provider, config.embedding_model, config.embedding_api_key,
             ",".join(embedding_remote_urls(config=config)), config.rag_rerank,
             config.rerank_base_url, config.rerank_model, config.rerank_api_key)
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()
