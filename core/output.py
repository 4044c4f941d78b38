"""Text rendering shared by the search / ask commands, and the page label that the LLM context
header shares with them."""

from __future__ import annotations

import json
from typing import Any

from ninja.responses import NinjaJSONEncoder


def body_json(body: Any) -> str:
    """Exactly what the HTTP API sends for this body."""
    return json.dumps(body, cls=NinjaJSONEncoder, ensure_ascii=False)


def page_span_label(*, page_start: int | None, page_end: int | None) -> str:
    """`p. 12`, `p. 12–13` (en dash) for a span of pages, "" for a chunk without pages."""
    if page_start is None:
        return ""
    if page_end is None or page_end == page_start:
        return f"p. {page_start}"
    return f"p. {page_start}\u2013{page_end}"


def citation_line(number: int, item: dict[str, Any]) -> str:
    """`[n] source › heading, p. 12–13 (score)`; the page part only for a chunk with pages."""
    heading = f" › {item['heading']}" if item.get("heading") else ""
    pages = page_span_label(page_start=item.get("page_start"), page_end=item.get("page_end"))
    page = f", {pages}" if pages else ""
    return f"[{number}] {item['source']}{heading}{page} ({item['score']:.4f})"
