"""The status page's facts: /health's checks and counts for the person's knowledge bases, the
providers in use (never a key: only whether one is set) with each model server's last probe
(ops/provider_health.py), the circuit breakers' states (core/breaker.py), and which vector search
path runs.

Each provider's readiness comes from its own family's status function (embedder_status,
llm_config_check, reranker_status), so this page names no provider of its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString
from django.utils.translation import gettext

from access.callers import Caller
from answering.llm import LLMConfigMissing, llm_config_check
from answering.llm_health import LLMHealth, llm_health
from answering.usage import costs_shown, usage_report, usage_since
from core.breaker import BreakerState, breaker_states
from core.config import Config, endpoint_origin
from core.db import db_errors_translated, raw_connection
from core.errors import LocalRagError
from core.replicas import replica_states
from embeddings import embedding_endpoints
from index.vector_index import VectorIndex, vector_index_status
from index.vector_path import VectorPath, vector_path_plan
from knowledge.selectors import kb_list_visible
from knowledge.upload_store import upload_store_shown
from ops.provider_health import ProviderHealth, providers_health
from ops.readiness import health_report
from retrieval.rerank.providers import reranker_spec, reranker_status
from workbench.answer_texts import error_shown
from workbench.pages.vector_reason import vector_reason_shown


@dataclass(frozen=True)
class Provider:
    role: str  # embedding, LLM or rerank
    name: str
    model: str
    status: str  # "ok" or a short reason
    endpoint: str = ""  # scheme://host:port only: paths and queries may carry keys
    key_set: bool | None = None  # None: the provider takes no key
    # The server's last probe (cached: answering/llm_health.py, ops/provider_health.py).
    probe: LLMHealth | ProviderHealth | None = None


@dataclass(frozen=True)
class VectorSearch:
    setting: str  # RAG_VECTOR_INDEX
    path: str  # what searches use now: "hnsw", "exact", or "unavailable"
    index: VectorIndex | None  # the HNSW index of the configured provider/model, if any
    min_chunks: int
    plan: VectorPath  # why that path, the ef_search and the recall measured
    reason: SafeString  # the plan's reason in the interface language


@dataclass(frozen=True)
class SystemStatus:
    status: str  # ok, degraded or unavailable
    checks: dict[str, str]
    error: str = ""  # why the database side cannot answer
    counts: dict[str, int] = field(default_factory=dict)
    bases: list[dict[str, Any]] = field(default_factory=list)
    providers: list[Provider] = field(default_factory=list)
    vector: VectorSearch | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # Each read replica as checked now (core/replicas.py): URL (password masked), usable, lag.
    replicas: list[dict[str, Any]] = field(default_factory=list)
    # Where uploads are kept (knowledge/upload_store.py), for staff.
    upload_store: dict[str, str] = field(default_factory=dict)
    # Each model server's circuit breaker this process has used, for staff.
    breakers: list[BreakerState] = field(default_factory=list)
    # Calls, tokens and cost of the last USAGE_DAYS per day, base and model (answering/usage.py),
    # over every caller's traces: for staff only; None for others.
    usage: dict[str, Any] | None = None


USAGE_DAYS = 7


def system_status(*, caller: Caller, config: Config, usage: bool = False) -> SystemStatus:
    """Everything the status page shows, counted within what the caller may read; with `usage`
    (a staff member's page) the token and cost totals of every traced call too."""
    probes = _probes(config)
    providers = _providers(config, rerank_probe=probes.get("rerank"))
    try:
        report = health_report(config=config, scope=caller.scope())
    except LocalRagError as exc:  # no database, schema or pgvector: the checks say which
        return SystemStatus(status="unavailable", checks=exc.details.get("checks", {}),
                            error=error_shown(exc), providers=providers,
                            breakers=breaker_states())
    details = report["details"]
    counts = {name: details[name] for name in ("documents", "chunks",
                                                "embeddings_current_config")}
    endpoints = embedding_endpoints(config=config)
    embedding = Provider(role="embedding", name=config.embedding_provider,
                         model=config.embedding_model,
                         status=report["checks"]["embedding_config"],
                         endpoint=", ".join(endpoints),
                         key_set=bool(config.embedding_api_key) if endpoints else None,
                         probe=probes.get("embedding"))
    return SystemStatus(status=report["status"], checks=report["checks"], counts=counts,
                        bases=kb_list_visible(caller=caller), providers=[embedding, *providers],
                        vector=_vector_search(config), details=details,
                        replicas=replica_states(config) if config.database_replica_urls else [],
                        upload_store=upload_store_shown(config), breakers=breaker_states(),
                        usage=_usage() if usage else None)


def _usage() -> dict[str, Any]:
    """The totals as three tables (per day, knowledge base, model), each row named and its
    costs said in one line."""
    report = usage_report(since=usage_since(days=USAGE_DAYS))
    tables = []
    for title, key, rows in ((gettext("Day"), "day", report["tokens_per_day"]),
                             (gettext("Knowledge base"), "knowledge_base",
                              report["tokens_per_knowledge_base"]),
                             (gettext("Model"), "model", report["tokens_per_model"])):
        tables.append({"title": title, "id": key,
                       "rows": [{**row, "name": row[key], "cost": costs_shown(row["costs"])}
                                for row in rows]})
    return {"days": USAGE_DAYS, "tables": tables}


def _probes(config: Config) -> dict[str, ProviderHealth]:
    """The embedding and rerank probes by kind; of several embedding servers, one that is down
    if any is (the row names them all)."""
    probes: dict[str, ProviderHealth] = {}
    for entry in providers_health(config=config):
        kept = probes.get(entry.kind)
        if kept is None or (entry.status == "down" and kept.status != "down"):
            probes[entry.kind] = entry
    return probes


def _providers(config: Config, *, rerank_probe: ProviderHealth | None) -> list[Provider]:
    try:
        llm_config_check(config=config)
        llm_status = "ok"
    except LLMConfigMissing:
        llm_status = "config_missing"
    remote_llm = config.llm_provider == "openai-compatible"
    llm = Provider(role="LLM", name=config.llm_provider, model=config.llm_model, status=llm_status,
                   endpoint=_origin(config.llm_base_url) if remote_llm else "",
                   key_set=bool(config.llm_api_key) if remote_llm else None,
                   probe=llm_health(config=config))
    spec = reranker_spec(config=config)
    rerank = Provider(role="rerank", name=config.rag_rerank,
                      model=config.rerank_model if "RERANK_MODEL" in spec.settings else "",
                      status=reranker_status(config=config),
                      endpoint=_origin(config.rerank_base_url)
                      if "RERANK_BASE_URL" in spec.settings else "",
                      key_set=bool(config.rerank_api_key)
                      if "RERANK_API_KEY" in spec.settings else None, probe=rerank_probe)
    return [llm, rerank]


def _origin(url: str) -> str:
    """scheme://host[:port] of an endpoint: no user, password, path or query string."""
    origin = endpoint_origin(url)
    return gettext("(not a valid URL)") if origin is None else origin


def _vector_search(config: Config) -> VectorSearch:
    current = next((index for index in vector_index_status(config=config)
                    if index.current), None)
    # The provider/model is all the plan reads of an embedder: no model is loaded for the page.
    with db_errors_translated():
        plan = vector_path_plan(conn=raw_connection(), config=config,
                                provider=config.embedding_provider, model=config.embedding_model)
    return VectorSearch(setting=config.rag_vector_index, path=plan.path, index=current,
                        min_chunks=config.rag_hnsw_min_chunks, plan=plan,
                        reason=vector_reason_shown(plan.reason))
