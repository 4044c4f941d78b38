"""Template filters of the workbench pages."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from workbench.labels import code_label

register = template.Library()
_SEPARATOR = re.compile(r"([/\\])")


@register.filter
def page_span(item: Any) -> str:
    """The label of a dict's or object's page_start/page_end in the interface language, as the
    CLI and the LLM context write it in English ("p. 3", "p. 3–4"); "" without pages."""
    start, end = _field(item, "page_start"), _field(item, "page_end")
    if start is None:
        return ""
    if end is None or end == start:
        return _("p. %(page)s") % {"page": start}
    return _("p. %(start)s–%(end)s") % {"start": start, "end": end}


@register.filter
def label(code: object) -> str:
    """A role's or a status's word in the interface language (workbench/labels.py)."""
    return code_label(code)


@register.filter
def path_breaks(path: object) -> SafeString:
    """A path, escaped, that may wrap after each separator rather than overflow or break
    inside a name: `a/<wbr>b/<wbr>c.md`."""
    return mark_safe(_SEPARATOR.sub(r"\1<wbr>", str(escape(path))))


@register.filter
def heading_trail(headings: Iterable[str] | None) -> str:
    return " › ".join(headings or [])


def _field(item: Any, name: str) -> Any:
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)
