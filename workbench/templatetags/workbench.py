"""Template filters of the workbench pages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template

register = template.Library()


@register.filter
def page_span(item: Any) -> str:
    """"p. 3" / "pp. 3–4" from a dict or object with page_start/page_end; "" without pages."""
    start = _field(item, "page_start")
    end = _field(item, "page_end")
    if start is None:
        return ""
    if end is None or end == start:
        return f"p. {start}"
    return f"pp. {start}–{end}"


@register.filter
def heading_trail(headings: Iterable[str] | None) -> str:
    return " › ".join(headings or [])


def _field(item: Any, name: str) -> Any:
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)
