"""Template filters of the workbench pages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template

from core.output import page_span_label

register = template.Library()


@register.filter
def page_span(item: Any) -> str:
    """The label the CLI and the LLM context use ("p. 3", "p. 3–4") of a dict or object with
    page_start/page_end; "" without pages."""
    return page_span_label(page_start=_field(item, "page_start"),
                           page_end=_field(item, "page_end"))


@register.filter
def heading_trail(headings: Iterable[str] | None) -> str:
    return " › ".join(headings or [])


def _field(item: Any, name: str) -> Any:
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)
