"""`GET /health`: database, schema, pgvector, embedding config and retrieval readiness."""

from __future__ import annotations

from ninja import Router

from core.config import get_config
from knowledge.selectors import health_report

router = Router(tags=["health"])


# Open without a token, like a load balancer's probe: it names no document or content.
@router.get("/health", auth=None,
            summary="Readiness of the database, schema, pgvector and embeddings")
def health(request):
    return health_report(config=get_config())
