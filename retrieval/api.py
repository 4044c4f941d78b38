"""`POST /search` — ranked chunks for a query, with a confidence."""

from __future__ import annotations

from ninja import Router

from core.config import get_config
from core.schemas import ErrorBody
from retrieval.schemas import SearchRequest, SearchResponse
from retrieval.services import search

router = Router(tags=["retrieval"])


@router.post("/search", response={200: SearchResponse, 422: ErrorBody, 503: ErrorBody},
             summary="Exact cosine search over the current embedding configuration")
def search_view(request, payload: SearchRequest):
    return search(query=payload.query, top_k=payload.top_k, config=get_config())
