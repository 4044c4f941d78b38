"""Which text may leave this machine: the knowledge bases' outbound policy, checked by every
remote call that would carry a base's text, and what did leave, recorded.

A knowledge base is `local-only` (every base created from now on, unless created otherwise) or
`allowed`. A call that would send a base's text to a server outside this machine — its chunks
to an embedding server, candidates to a rerank server, a context or a conversation to the LLM —
is refused before anything is sent when any base whose text it carries is `local-only`
(OutboundRefused, naming the bases; the check reads the bases, so it lives with them in
knowledge/outbound.py). A server is on this machine when its URL's host is one of
RAG_OUTBOUND_LOCAL_HOSTS (loopback by default); every other host, one of the team's own network
included, is outside until it is listed there.

Every call to a server outside this machine makes a record (what for, the endpoint's host, the
bases, the chunk ids, the bytes of text) that the service returns with what it measured and its
entry point keeps in the request's trace (`parameters.outbound`); an ingest's goes into its
run's summary. An operator can show what left and where.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from core.config import Config
from core.errors import InvalidRequest, LocalRagError

logger = logging.getLogger("localrag.outbound")

OUTBOUND_LOCAL_ONLY = "local-only"
OUTBOUND_ALLOWED = "allowed"
OUTBOUND_POLICIES = (OUTBOUND_LOCAL_ONLY, OUTBOUND_ALLOWED)


class OutboundRefused(LocalRagError):
    code = "outbound_refused"


def outbound_policy_check(value: str) -> str:
    if value not in OUTBOUND_POLICIES:
        raise InvalidRequest(f"outbound must be one of {', '.join(OUTBOUND_POLICIES)}, got "
                             f"{value!r}", details={"field": "outbound"})
    return value


def endpoint_host(url: str) -> str:
    """The host of an endpoint URL, lower case (no port, user or path): what a trace keeps."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def endpoint_is_local(url: str, *, config: Config) -> bool:
    """Whether text sent to `url` stays on this machine (its host is in
    RAG_OUTBOUND_LOCAL_HOSTS)."""
    host = endpoint_host(url)
    return bool(host) and host in config.rag_outbound_local_hosts


def outbound_record(*, config: Config, url: str, what: str, texts: Iterable[str],
                    knowledge_bases: Iterable[str] = (),
                    chunk_ids: Iterable[int | None] = ()) -> dict[str, Any] | None:
    """The record of `texts` going to `url` for `what`, for the caller to return with what it
    measured; None for a server on this machine."""
    if endpoint_is_local(url, config=config):
        return None
    record = {"what": what, "endpoint_host": endpoint_host(url),
              "knowledge_bases": sorted(set(knowledge_bases)),
              "chunk_ids": [chunk_id for chunk_id in chunk_ids if chunk_id is not None],
              "bytes": sum(len(text.encode()) for text in texts)}
    return record
