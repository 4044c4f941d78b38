"""The `openai-compatible` reranker: `POST {RERANK_BASE_URL}/reranks` over httpx.

Request: `{"model", "query", "documents", "top_n"[, "instruct"]}`, every field top-level, the
documents fitted to the provider's limits first (limits.py). Response: `{"results": [{"index",
"relevance_score"}, ...]}`; each score is mapped back to its document by `index` alone (never by
the order of the results or a returned text), and an index out of range or repeated is an
upstream error. A document the server leaves out keeps its fused place, unscored.

Each call keeps one wall-clock deadline of RERANK_TIMEOUT_SECONDS (core/http_deadlines.py) and
retries within it, up to LLM_MAX_RETRIES times, by the LLM client's rules (core/http_retries.py).
The API key goes into the Authorization header and nowhere else: not into errors, details,
reprs, logs or exception chains; the URL goes to the log only.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from core.config import Config
from core.errors import LocalRagError
from core.http_deadlines import Deadline, deadline_transport
from core.http_retries import (
    RetryableFailure,
    endpoint_display,
    error_details,
    retry_after_seconds,
    retry_wait,
    status_retryable,
)
from retrieval.rerank.base import RerankCandidate, RerankedCandidate, ranked_by_score
from retrieval.rerank.limits import rerank_request_plan

logger = logging.getLogger("localrag.rerank")

ENDPOINT = "/reranks"
# 500 results, even with each document's text echoed back, stay far below this.
RESPONSE_MAX_BYTES = 16 * 1024 * 1024

# A dropped or refused connection may well work the second time; a malformed request will not.
_RETRYABLE_ERRORS = (httpx.NetworkError, httpx.RemoteProtocolError)


class RerankTimeout(LocalRagError):
    code = "rerank_timeout"


class RerankAuthFailed(LocalRagError):
    code = "rerank_auth_failed"


class RerankRateLimited(LocalRagError):
    code = "rerank_rate_limited"


class RerankUpstreamError(LocalRagError):
    code = "rerank_upstream_error"


class OpenAICompatibleReranker:
    """A rerank server that scores (query, document) pairs; higher is better."""

    name = "openai-compatible"

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout_seconds: float,
                 max_retries: int = 2, instruct: str | None = None) -> None:
        self.url = f"{base_url.rstrip('/')}{ENDPOINT}"
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.max_retries = max_retries
        self.instruct = instruct
        self._api_key = api_key
        self._display_url = endpoint_display(self.url, setting="RERANK_BASE_URL")

    def __repr__(self) -> str:
        return (f"OpenAICompatibleReranker(url={self._display_url!r}, model={self.model!r}, "
                f"timeout_seconds={self.timeout_seconds!r}, api_key=<set>)")

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
        scores = _scores(self._post(body=body), count=len(plan.documents))
        if len(scores) < len(plan.documents):
            logger.warning("rerank server scored %d of %d documents; the rest keep their "
                           "fused order", len(scores), len(plan.documents))
        scored = [RerankedCandidate(candidate=plan.sent[index], score=score,
                                    truncated=index in plan.truncated)
                  for index, score in scores.items()]
        missing = [candidate for index, candidate in enumerate(plan.sent) if index not in scores]
        return ranked_by_score(scored, [*missing, *plan.left_out])

    def _post(self, *, body: dict[str, Any]) -> bytes:
        deadline = Deadline(seconds=self.timeout_seconds)
        retries = 0
        while True:
            try:
                return self._post_once(body=body, deadline=deadline)
            except RetryableFailure as failure:
                retry_wait(failure=failure, retries_done=retries, max_retries=self.max_retries,
                           deadline=deadline, logger=logger, subject="rerank request")
                retries += 1

    def _post_once(self, *, body: dict[str, Any], deadline: Deadline) -> bytes:
        try:
            # trust_env=False: a proxy taken from the environment would get httpx's own
            # transport, which knows nothing of the deadline.
            with httpx.Client(transport=deadline_transport(deadline=deadline),
                              timeout=httpx.Timeout(self.timeout_seconds),
                              trust_env=False) as client, client.stream(
                    "POST", self.url, headers=self._headers(), json=body) as response:
                self._check_status(response)
                return b"".join(_body_chunks(response, deadline=deadline))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._translate(exc) from None

    def _headers(self) -> dict[str, str]:
        # identity: the size cap then counts what arrives.
        return {"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json",
                "Accept-Encoding": "identity"}

    def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        # Bodies are never logged: some servers echo request headers, and with them the key.
        logger.warning("rerank request failed: HTTP %s from %s", status, self._display_url)
        details: dict[str, Any] = {"status": status}
        if status in (401, 403):
            raise RerankAuthFailed(
                f"the rerank server rejected the credentials (HTTP {status}); check "
                "RERANK_API_KEY", details=details)
        retry_after = retry_after_seconds(headers=response.headers)
        if status == 429:
            headers = {"Retry-After": str(math.ceil(retry_after))} if retry_after else None
            error: LocalRagError = RerankRateLimited(
                "the rerank server is rate limiting requests (HTTP 429)", details=details,
                headers=headers)
        else:
            error = RerankUpstreamError(f"the rerank server answered HTTP {status}",
                                        details=details)
        if status_retryable(status):
            raise RetryableFailure(error, retry_after=retry_after)
        raise error

    def _translate(self, exc: httpx.HTTPError | httpx.InvalidURL
                   ) -> LocalRagError | RetryableFailure:
        name = type(exc).__name__
        details = error_details(exc, display_url=self._display_url)
        if isinstance(exc, httpx.TimeoutException):
            message = (f"the rerank server did not answer within RERANK_TIMEOUT_SECONDS "
                       f"({self.timeout_seconds}s)")
            logger.warning("rerank request to %s timed out", self._display_url)
            return RerankTimeout(message, details=details)
        logger.warning("rerank request failed: %s from %s", name, self._display_url)
        error = RerankUpstreamError(f"the request to the rerank server failed ({name})",
                                    details=details)
        return RetryableFailure(error) if isinstance(exc, _RETRYABLE_ERRORS) else error


def openai_compatible_reranker(*, config: Config) -> OpenAICompatibleReranker:
    """The reranker for RERANK_BASE_URL / RERANK_MODEL / RERANK_API_KEY."""
    return OpenAICompatibleReranker(base_url=config.rerank_base_url, model=config.rerank_model,
                                    api_key=config.rerank_api_key,
                                    timeout_seconds=config.rerank_timeout_seconds,
                                    max_retries=config.llm_max_retries)


def _body_chunks(response: httpx.Response, *, deadline: Deadline) -> Iterator[bytes]:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > RESPONSE_MAX_BYTES:
        raise _malformed(f"the rerank answer is larger than {RESPONSE_MAX_BYTES} bytes",
                         reason="response_too_large")
    received = 0
    for chunk in response.iter_bytes():
        received += len(chunk)
        if received > RESPONSE_MAX_BYTES:
            raise _malformed(f"the rerank answer is larger than {RESPONSE_MAX_BYTES} bytes",
                             reason="response_too_large")
        # Every read is bounded already; this also stops data that was buffered in time.
        if deadline.remaining() <= 0:
            raise httpx.ReadTimeout("the call's deadline has passed")
        yield chunk


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


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)



def _malformed(message: str, *, reason: str = "malformed_response") -> RerankUpstreamError:
    logger.warning("rerank response unusable: %s", message)
    return RerankUpstreamError(message, details={"reason": reason})
