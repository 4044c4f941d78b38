"""What a caller sees of the knowledge bases: the body of GET /knowledge-bases, which the MCP
server's `list_knowledge_bases` returns too."""

from __future__ import annotations

from typing import Any

from knowledge.access import Caller
from knowledge.bases import kb_list


def kb_list_visible(*, caller: Caller) -> list[dict[str, Any]]:
    """The knowledge bases the caller may read, with their counts and the caller's role."""
    bases = kb_list(ids=caller.scope().knowledge_base_ids)
    # Without `sources`: those are folders on the server, not the caller's business.
    return [{**{key: value for key, value in base.as_dict().items() if key != "sources"},
             "role": "maintainer" if caller.everything or base.id in caller.writable
             else "reader"}
            for base in bases]
