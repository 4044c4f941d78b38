"""The outbound policy's check against the knowledge bases: whether a call may carry their text.

The policy itself (what counts as this machine, what a refusal says, what a trace records of
what left) is embeddings/outbound.py; this half reads the bases' `outbound` column, which this app
owns."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import connection

from core.config import Config
from core.db import db_errors_translated
from embeddings.outbound import OutboundRefused, endpoint_host, endpoint_is_local
from knowledge import sql

logger = logging.getLogger("localrag.outbound")


def outbound_check(*, config: Config, url: str, what: str, knowledge_base_ids: Iterable[int] = (),
                   knowledge_bases: Iterable[str] = ()) -> None:
    """Refuse (OutboundRefused) to send `what` — text of these bases, by id or slug — to `url`
    when that is outside this machine and any of them is local-only; nothing to check for a
    server on this machine."""
    if endpoint_is_local(url, config=config):
        return
    ids = sorted(set(knowledge_base_ids))
    slugs = sorted(set(knowledge_bases))
    if not ids and not slugs:
        return
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.KB_LOCAL_ONLY, [ids, slugs])
        blocked = [slug for (slug,) in cursor.fetchall()]
    if blocked:
        # The server's host goes to the log only: error bodies reach API clients, who have no
        # business knowing where the servers are (as for every upstream error).
        logger.warning("refused to send %s to %s: local-only knowledge bases %s", what,
                       endpoint_host(url) or "(an unreadable URL)", ", ".join(blocked))
        raise OutboundRefused(
            f"{what} would send text of the local-only knowledge base(s) {', '.join(blocked)} "
            "to a server outside this machine; nothing was sent. Allow it for a base with "
            "`rag kb update SLUG --outbound allowed` (or the admin), use a server on this "
            "machine, or list the server's host in RAG_OUTBOUND_LOCAL_HOSTS",
            details={"knowledge_bases": blocked, "what": what})
