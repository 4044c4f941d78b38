"""Template filters of the workbench pages."""

from __future__ import annotations

from django import template

from workbench.rendering import markdown_safe

register = template.Library()


@register.filter
def markdown(text: str):
    """Untrusted Markdown, rendered safely (workbench/rendering.py)."""
    return markdown_safe(text)


@register.filter
def page_span(item) -> str:
    """"p. 3" / "pp. 3–4" from a dict or object with page_start/page_end; "" without pages."""
    start = _field(item, "page_start")
    end = _field(item, "page_end")
    if start is None:
        return ""
    if end is None or end == start:
        return f"p. {start}"
    return f"pp. {start}–{end}"


@register.filter
def heading_trail(headings) -> str:
    return " › ".join(headings or [])


@register.filter
def percent(value) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.1f}%"


def _field(item, name):
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)
