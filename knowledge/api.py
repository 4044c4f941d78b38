"""`GET /health`: database, schema, pgvector, embedding config and retrieval readiness."""

from __future__ import annotations

from ninja import Router

from core.config import get_config
from access.auth import request_caller
from knowledge.schema import schema_state
from knowledge.selectors import health_report

router = Router(tags=["health"])


# Open without a token, like a load balancer's probe: it names no document or content, and
# counts only what the caller may see (nothing without credentials once access control is on).
@router.get("/health", auth=None,
            summary="Readiness of the database, schema, pgvector and embeddings")
def health(request):
    config = get_config()
    if not schema_state()["schema"]:
        return health_report(config=config, scope=None)  # raises the 503 with the checks
    caller = request_caller(request)
    return health_report(config=config, scope=caller.scope() if caller is not None else None)
