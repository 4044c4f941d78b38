"""Readiness checks: the bodies of /health (what works and what it counts, for the caller)
and /health/ready (whether this installation can serve now, for a probe)."""

from __future__ import annotations

from access.callers import Scope
from answering.llm_health import llm_health
from core.config import Config, endpoint_origin
from core.db import db_errors_translated
from core.errors import LocalRagError
from core.replicas import replica_states
from embeddings import embedder_status, embedding_endpoints, embedding_native_dim
from index.status import health_section as search_index_health
from index.vector_path import vector_path_plan
from jobs.workers import workers_alive
from knowledge.db_schema import index_connection, schema_error, schema_state
from knowledge.selectors import index_counts
from knowledge.upload_store import upload_store_shown


def health_report(*, config: Config, scope: Scope | None, admin: bool = False) -> dict:
    """The /health body; raises the 503 domain errors (with the checks as details) when the
    database, the schema or pgvector is not there. The counts are those of `scope` (what the
    caller may see); without a scope (no credentials while access control is on) the body
    holds the checks and no count. Only an `admin` learns where the embedding servers are."""
    state = schema_state()
    checks = {
        "app": "ok",
        "database": "ok" if state["database"] else "unavailable",
        "schema": "ok" if state["schema"] else "missing",
        "pgvector": "ok" if state["pgvector"] else "missing",
        "embedding_config": embedder_status(config=config),
        "retrieval_ready": "not_ready",
    }
    error = schema_error(state, details={"checks": checks})
    if error is not None:
        raise error
    # A caller's readiness is that of what it may search; a probe without credentials learns
    # only whether anything is searchable at all.
    counts = index_counts(config=config, scope=scope)
    checks["retrieval_ready"] = "ok" if counts.embeddings_current_config else "not_ready"
    healthy = checks["embedding_config"] == "ok" and checks["retrieval_ready"] == "ok"
    # Which vector path searches take and why (an exact scan where the index's measured recall
    # misses RAG_HNSW_TARGET_RECALL): no vector count, so it is the same for every caller.
    with db_errors_translated():
        vector_search = vector_path_plan(conn=index_connection(), config=config,
                                         provider=config.embedding_provider,
                                         model=config.embedding_model).details()
    details: dict = {
        "embedding_provider": config.embedding_provider,
        "embedding_model": config.embedding_model,
        "embedding_native_dim": embedding_native_dim(config=config),
        "vector_search": vector_search,
    }
    if scope is not None:
        details.update(documents=counts.documents, chunks=counts.chunks,
                       embeddings_current_config=counts.embeddings_current_config)
    details["search_index"] = search_index_health(
        config=config, admin=admin,
        knowledge_base_ids=list(scope.knowledge_base_ids) if scope is not None else None)
    # The LLM server's last probe (cached per process: answering/llm_health.py), or `local`.
    details["llm"] = llm_health(config=config).as_dict()
    if admin:
        if config.llm_provider == "openai-compatible":
            details["llm"]["endpoint"] = endpoint_origin(config.llm_base_url)
        # Where text goes to be embedded (scheme://host:port; [] for a model run here): as on
        # the status page, for those who run the service; readers and probes learn no network.
        details["embedding_endpoints"] = embedding_endpoints(config=config)
        details["upload_store"] = upload_store_shown(config)
        if config.database_replica_urls:
            # Each read replica as checked now: its URL (password masked), usable, lag.
            details["replicas"] = replica_states(config)
    return {"status": "ok" if healthy else "degraded", "checks": checks, "details": details}


class ServiceNotReady(LocalRagError):
    code = "service_not_ready"


def readiness_report(*, config: Config) -> dict:
    """The /health/ready body when the database, the schema, pgvector, the embedder's
    configuration and a job worker are all there; else ServiceNotReady (503) naming what is
    missing, with the checks as details. Counts nothing: a probe runs every few seconds."""
    state = schema_state()
    checks = {
        "database": "ok" if state["database"] else "unavailable",
        "schema": "ok" if state["schema"] else "missing",
        "pgvector": "ok" if state["pgvector"] else "missing",
        "embedding_config": embedder_status(config=config),
        "worker": "unknown",
    }
    if state["schema"]:
        # A worker waiting for work, or one busy with a job whose lease it keeps.
        checks["worker"] = "ok" if workers_alive().any else "missing"
    failing = {name: value for name, value in checks.items() if value != "ok"}
    if failing:
        raise ServiceNotReady("not ready: " + ", ".join(
            f"{name} {value}" for name, value in failing.items()), details={"checks": checks})
    return {"status": "ready", "checks": checks}
