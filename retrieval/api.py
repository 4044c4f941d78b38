"""`POST /search` — ranked chunks for a query, with a confidence."""

from __future__ import annotations

from typing import Any

from ninja import Router

from access.auth import CallerRequest
from core.api_schemas import ErrorBody
from core.config import get_config
from retrieval.api_schemas import SearchRequest, SearchResponse, filters_checked
from retrieval.services import search, search_body

router = Router(tags=["retrieval"])


# exclude_unset: without `explain` requested the body is exactly the first release's.
@router.post("/search", response={200: SearchResponse, 401: ErrorBody, 404: ErrorBody,
                                  422: ErrorBody, 503: ErrorBody},
             exclude_unset=True,
             summary="Ranked chunks by RAG_RETRIEVAL (vector, lexical or hybrid) with a confidence")
def search_view(request: CallerRequest, payload: SearchRequest) -> dict[str, Any]:
    scope = request.auth.scope(slugs=payload.knowledge_bases)
    outcome = search(query=payload.query, top_k=payload.top_k, config=get_config(),
                     scope=scope, explain=payload.explain,
                     filters=filters_checked(payload.filters))
    return search_body(outcome)
