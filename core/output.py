"""Terminal rendering shared by the search / ask commands."""

from __future__ import annotations

import json
from typing import Any

from ninja.responses import NinjaJSONEncoder


def body_json(body: Any) -> str:
    """Exactly what the HTTP API sends for this body."""
    return json.dumps(body, cls=NinjaJSONEncoder, ensure_ascii=False)


def citation_line(number: int, item: dict[str, Any]) -> str:
    """`[n] source › heading (score)`."""
    heading = f" › {item['heading']}" if item.get("heading") else ""
    return f"[{number}] {item['source']}{heading} ({item['score']:.4f})"
