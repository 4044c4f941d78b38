"""What a caller sees of the knowledge bases: the body of GET /knowledge-bases, which the MCP
server's `list_knowledge_bases` returns too."""

from __future__ import annotations

from typing import Any

from access.callers import Caller
from knowledge.bases import KnowledgeBaseInfo, kb_list


def kb_list_visible(*, caller: Caller) -> list[dict[str, Any]]:
    """The knowledge bases the caller may read, with their counts and the caller's role."""
    return [kb_entry(base, caller=caller)
            for base in kb_list(ids=caller.scope().knowledge_base_ids)]


def kb_entry(base: KnowledgeBaseInfo, *, caller: Caller) -> dict[str, Any]:
    """One base as the caller sees it: its counts and the caller's role."""
    # Without `sources`: those are folders on the server, not the caller's business.
    return {**{key: value for key, value in base.as_dict().items() if key != "sources"},
            "role": "maintainer" if caller.may_maintain(base.id) else "reader"}
