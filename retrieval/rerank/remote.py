"""The `openai-compatible` reranker: `POST {RERANK_BASE_URL}/reranks` over httpx.

Request: `{"model", "query", "documents", "top_n"[, "instruct"]}`, every field top-level, the
documents fitted to the provider's limits first (limits.py). Response: `{"results": [{"index",
"relevance_score"}, ...]}`; each score is mapped back to its document by `index` alone (never by
the order of the results or a returned text), and an index out of range or repeated is an
upstream error. A document the server leaves out keeps its fused place, unscored.

Each call keeps one wall-clock deadline of RERANK_TIMEOUT_SECONDS and retries within it, up to
LLM_MAX_RETRIES times, by the rules every OpenAI-compatible client shares (core/http_client.py),
which also keeps the API key out of errors, reprs and logs.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any, TypeGuard

from core.config import Config
from core.errors import LocalRagError
from core.http_client import OpenAICompatibleHTTP, UpstreamService, upstream_malformed
from core.http_deadlines import Deadline
from retrieval.rerank.base import RerankCandidate, RerankedCandidate, ranked_by_score
from retrieval.rerank.limits import rerank_request_plan

logger = logging.getLogger("localrag.rerank")

ENDPOINT = "/reranks"
# 500 results, even with each document's text echoed back, stay far below this.
RESPONSE_MAX_BYTES = 16 * 1024 * 1024

class RerankTimeout(LocalRagError):
    code = "rerank_timeout"


class RerankAuthFailed(LocalRagError):
    code = "rerank_auth_failed"


class RerankRateLimited(LocalRagError):
    code = "rerank_rate_limited"


class RerankUpstreamError(LocalRagError):
    code = "rerank_upstream_error"


class RerankUnavailable(LocalRagError):
    code = "rerank_unavailable"


RERANK_SERVICE = UpstreamService(
    name="rerank", url_setting="RERANK_BASE_URL", key_setting="RERANK_API_KEY",
    timeout_setting="RERANK_TIMEOUT_SECONDS", timeout=RerankTimeout,
    auth_failed=RerankAuthFailed, rate_limited=RerankRateLimited,
    upstream_error=RerankUpstreamError, unavailable=RerankUnavailable)


class OpenAICompatibleReranker(OpenAICompatibleHTTP):
    """A rerank server that scores (query, document) pairs; higher is better."""

    name = "openai-compatible"
    service = RERANK_SERVICE

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout_seconds: float,
                 max_retries: int = 2, instruct: str | None = None) -> None:
        super().__init__(url=f"{base_url.rstrip('/')}{ENDPOINT}", model=model, api_key=api_key,
                         timeout_seconds=timeout_seconds, max_retries=max_retries,
                         max_response_bytes=RESPONSE_MAX_BYTES, logger=logger)
        self.instruct = instruct

    def rerank(self, *, query: str,
               candidates: Sequence[RerankCandidate]) -> list[RerankedCandidate]:
        """Every candidate: those sent best first by the server's score, then the rest."""
        if not candidates:
            return []
        plan = rerank_request_plan(query=query, candidates=candidates)
        body: dict[str, Any] = {"model": self.model, "query": query,
                                "documents": plan.documents, "top_n": len(plan.documents)}
        if self.instruct:
            body["instruct"] = self.instruct
        raw = self.with_retries(lambda attempt: self.post_read(body, deadline=attempt),
                                deadline=Deadline(seconds=self.timeout_seconds))
        scores = _scores(raw, count=len(plan.documents))
        if len(scores) < len(plan.documents):
            logger.warning("rerank server scored %d of %d documents; the rest keep their "
                           "fused order", len(scores), len(plan.documents))
        scored = [RerankedCandidate(candidate=plan.sent[index], score=score,
                                    truncated=index in plan.truncated)
                  for index, score in scores.items()]
        missing = [candidate for index, candidate in enumerate(plan.sent) if index not in scores]
        return ranked_by_score(scored, [*missing, *plan.left_out])


def openai_compatible_reranker(*, config: Config) -> OpenAICompatibleReranker:
    """The reranker for RERANK_BASE_URL / RERANK_MODEL / RERANK_API_KEY."""
    return OpenAICompatibleReranker(base_url=config.rerank_base_url, model=config.rerank_model,
                                    api_key=config.rerank_api_key,
                                    timeout_seconds=config.rerank_timeout_seconds,
                                    max_retries=config.llm_max_retries)


def _scores(raw: bytes, *, count: int) -> dict[int, float]:
    """index -> score from a rerank answer for `count` documents."""
    try:
        results = json.loads(raw)["results"]
    except (ValueError, KeyError, TypeError):
        raise _malformed("the rerank response is not JSON with a `results` list") from None
    if not isinstance(results, list):
        raise _malformed("the rerank response's `results` is not a list")
    scores: dict[int, float] = {}
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        score = result.get("relevance_score") if isinstance(result, dict) else None
        if not _is_number(score) or not math.isfinite(score):
            raise _malformed("a rerank result has no finite `relevance_score`")
        if type(index) is not int or not 0 <= index < count:
            raise _malformed(f"a rerank result names document {repr(index)[:40]}; {count} "
                             "were sent", reason="bad_index")
        if index in scores:
            raise _malformed(f"the rerank response scores document {index} twice",
                             reason="bad_index")
        scores[index] = float(score)
    return scores


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)



def _malformed(message: str, *, reason: str = "malformed_response") -> LocalRagError:
    return upstream_malformed(RERANK_SERVICE, message, logger=logger, reason=reason)
