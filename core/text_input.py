"""Text a client sends must be Unicode that can be stored and sent on: a JSON string may spell a
lone UTF-16 surrogate (`"\\ud800"`), which Python decodes into a str that no UTF-8 encoder takes.
Left in, it fails far from where it came in (in the database driver, in a JSON reply, in an MCP
message) as a 500 or no reply at all. Bodies are checked once, where they are parsed."""

from __future__ import annotations

import re
from typing import Any

from core.errors import InvalidRequest

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_field(value: Any, *, root: str = "body") -> str | None:
    """Where in `value` (parsed JSON: dicts, lists, strings, numbers) the first text holding a
    lone surrogate is, as the API names fields (`filters.frontmatter.region`,
    `messages[0].content`, `a key of filters.frontmatter`); None when every key and string is
    valid. A walk with its own stack: nesting as deep as the parser allowed is no risk."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path or root
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"a key of {path or root}"
                stack.append((f"{path}.{key}" if path else str(key), child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
    return None


def lone_surrogate_refusal(field: str) -> InvalidRequest:
    """The refusal of a text holding a lone surrogate; it names the field, never the text."""
    return InvalidRequest(
        f"{field} holds a lone UTF-16 surrogate (an unpaired \\ud800–\\udfff escape), which is "
        "not Unicode text; send valid UTF-8",
        details={"field": field, "reason": "lone_surrogate"})


def lone_surrogate_check(value: Any, *, root: str = "body") -> None:
    field = lone_surrogate_field(value, root=root)
    if field is not None:
        raise lone_surrogate_refusal(field)
