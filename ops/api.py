"""The operations API: `GET /health` (database, schema, pgvector, embedding config and
retrieval readiness, with counts for the caller), `/health/live` and `/health/ready` (probes),
and `GET /providers/health` (a live call to each model server, for admins).

Each route keeps the operationId it had when the knowledge app served it (generated clients name
their methods after it)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from access.auth import CallerRequest, request_caller
from core.config import get_config
from knowledge.db_schema import schema_state
from ops.provider_health import providers_health
from ops.readiness import health_report, readiness_report

router = Router(tags=["health"])
_OPERATION_PREFIX = "knowledge_api_"


# Open without a token, like a load balancer's probe: it names no document or content, and
# counts only what the caller may see (nothing without credentials once access control is on).
@router.get("/health", auth=None, tags=["health"], operation_id=_OPERATION_PREFIX + "health",
            summary="Readiness of the database, schema, pgvector and embeddings")
def health(request: HttpRequest) -> dict[str, Any]:
    config = get_config()
    if not schema_state()["schema"]:
        return health_report(config=config, scope=None)  # raises the 503 with the checks
    caller = request_caller(request)
    return health_report(config=config, scope=caller.scope() if caller is not None else None,
                         admin=caller is not None and caller.admin)


@router.get("/health/live", auth=None, tags=["health"],
            operation_id=_OPERATION_PREFIX + "health_live",
            summary="Liveness: the process answers (no database call)")
def health_live(request: HttpRequest) -> dict[str, str]:
    return {"status": "alive"}


@router.get("/health/ready", auth=None, tags=["health"],
            operation_id=_OPERATION_PREFIX + "health_ready",
            summary="Readiness: database, schema, pgvector, embedder and a job worker; 503 "
                    "naming what is missing")
def health_ready(request: HttpRequest) -> dict[str, Any]:
    return readiness_report(config=get_config())


# Admins only: it makes live calls to paid services (cached a minute), and names their models.
@router.get("/providers/health", tags=["health"], operation_id="ops_api_providers_health",
            summary="A live call to each model server (LLM, embeddings, rerank), for admins")
def providers_health_view(request: CallerRequest) -> dict[str, Any]:
    request.auth.admin_check(what="read the model servers' health")
    return {"providers": [entry.as_dict() for entry in providers_health(config=get_config())]}
