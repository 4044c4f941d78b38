"""What a remote rerank request may hold, and how candidates are fitted into it.

The provider's limits: at most MAX_DOCUMENTS documents; at most MAX_TEXT_TOKENS tokens in the
query and in each document; and at most MAX_REQUEST_TOKENS for the request, where the query
counts once per document (query_tokens × documents + the documents' tokens). Tokens are counted
with core/text_tokens.py (cl100k_base) on the exact strings sent.

The policy, in fused order (the best-fused candidates are the ones worth a model's attention):
a query over MAX_TEXT_TOKENS is refused (`rerank_request_invalid`: cutting a question changes
what is asked; the pipeline falls back to the fused order); a document over MAX_TEXT_TOKENS is
cut to its first MAX_TEXT_TOKENS tokens (its note, section and opening, what a model reads
first); then candidates are taken in fused order while the request stays within both the
document count and the token total. The first one that does not fit ends the request, so
everything sent ranks above everything left out in the fused order; the ones left out follow
the reranked ones, unscored, in fused order. With both texts at most 4,000 tokens, at least 15
documents always fit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import LocalRagError
from core.text_tokens import decode, encode, tokens_count
from retrieval.rerank.base import RerankCandidate, candidate_text, fused_order

logger = logging.getLogger("localrag.rerank")

MAX_DOCUMENTS = 500
MAX_TEXT_TOKENS = 4_000
MAX_REQUEST_TOKENS = 120_000


class RerankRequestInvalid(LocalRagError):
    code = "rerank_request_invalid"


@dataclass(frozen=True)
class RerankRequestPlan:
    """The documents of one request: `documents[i]` is the text of `sent[i]`."""

    query_tokens: int
    sent: list[RerankCandidate]
    documents: list[str]
    truncated: frozenset[int]  # indexes of documents cut to MAX_TEXT_TOKENS
    left_out: list[RerankCandidate]  # over the limits, in fused order
    request_tokens: int  # query_tokens × len(documents) + the documents' tokens


def rerank_request_plan(*, query: str, candidates: Sequence[RerankCandidate]) -> RerankRequestPlan:
    """Fit `candidates` into one request by the policy above; raise RerankRequestInvalid for a
    query over MAX_TEXT_TOKENS."""
    query_tokens = tokens_count(query)
    if query_tokens > MAX_TEXT_TOKENS:
        raise RerankRequestInvalid(
            f"the query has {query_tokens} tokens; the rerank provider takes at most "
            f"{MAX_TEXT_TOKENS}", details={"query_tokens": query_tokens,
                                           "limit_tokens": MAX_TEXT_TOKENS})
    ordered = fused_order(candidates)
    sent: list[RerankCandidate] = []
    documents: list[str] = []
    truncated: set[int] = set()
    total = 0
    for candidate in ordered[:MAX_DOCUMENTS]:
        text = candidate_text(candidate)
        tokens = tokens_count(text)
        if tokens > MAX_TEXT_TOKENS:
            text = text_truncate(text, limit=MAX_TEXT_TOKENS)
            tokens = tokens_count(text)
            truncated.add(len(documents))
        if total + query_tokens + tokens > MAX_REQUEST_TOKENS:
            break
        total += query_tokens + tokens
        sent.append(candidate)
        documents.append(text)
    left_out = ordered[len(sent):]
    if left_out or truncated:
        logger.info("rerank request: %d of %d candidates sent (%d tokens), %d cut to %d tokens",
                    len(sent), len(ordered), total, len(truncated), MAX_TEXT_TOKENS)
    return RerankRequestPlan(query_tokens=query_tokens, sent=sent, documents=documents,
                             truncated=frozenset(truncated), left_out=left_out,
                             request_tokens=total)


def text_truncate(text: str, *, limit: int) -> str:
    """The longest start of `text` whose own token count is at most `limit`."""
    tokens = encode(text)
    # Decoding a cut through a multi-byte character leaves a replacement character, which may
    # count as more tokens than it replaced: shorten until the text itself fits.
    for cut in range(min(limit, len(tokens)), 0, -1):
        piece = decode(tokens[:cut])
        if tokens_count(piece) <= limit:
            return piece
    return ""
