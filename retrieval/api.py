"""`POST /search` — ranked chunks for a query, with a confidence."""

from __future__ import annotations

from typing import Any

from ninja import Router

from access.auth import CallerRequest
from core.api_schemas import ErrorBody
from core.config import get_config
from retrieval.api_schemas import SearchRequest, SearchResponse, filters_checked, search_body
from retrieval.services import explain_check, search
from retrieval.types import RetrievalRequest
from traces.recording import trace_of, trace_record

router = Router(tags=["retrieval"])


# exclude_unset: without `explain` requested the body is exactly the first release's.
@router.post("/search", response={200: SearchResponse, 401: ErrorBody, 403: ErrorBody,
                                  404: ErrorBody, 422: ErrorBody, 503: ErrorBody},
             exclude_unset=True,
             summary="Ranked chunks by RAG_RETRIEVAL (vector, lexical or hybrid) with a confidence")
def search_view(request: CallerRequest, payload: SearchRequest) -> dict[str, Any]:
    scope = request.auth.scope(slugs=payload.knowledge_bases)
    if payload.explain:
        explain_check(caller=request.auth, scope=scope)
    outcome = search(RetrievalRequest(query=payload.query, scope=scope,
                                      top_k=payload.top_k, explain=payload.explain,
                                      filters=filters_checked(payload.filters)),
                     config=get_config())
    trace = trace_of(request)
    trace_record(trace, outcome.measures)
    return search_body(outcome, trace_id=trace.id if trace is not None else None)
