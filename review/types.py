"""What the review queue's services take and give: typed requests and the task as shown."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

KINDS = ("ocr_page", "table")
STATUSES = ("open", "accepted", "fixed", "excluded", "superseded")
NOTE_MAX_CHARS = 2_000
FIX_MAX_CHARS = 100_000  # one page's reviewed text


@dataclass(frozen=True)
class ReviewAction:
    """Accept or exclude one task, with an optional note."""

    task_id: int
    note: str | None = None


@dataclass(frozen=True)
class ReviewFix:
    """Correct one task's page: `text` is the page's text in the version the fix builds."""

    task_id: int
    text: str
    note: str | None = None


@dataclass(frozen=True)
class ReviewQuery:
    """A page of the queue, narrowed to one base (slug), status and kind when given."""

    knowledge_base: str | None = None
    status: str | None = None
    kind: str | None = None
    limit: int = 50
    offset: int = 0


@dataclass(frozen=True)
class ReviewTask:
    """A task as the API, the CLI and the workbench show it."""

    id: int
    knowledge_base_id: int
    knowledge_base: str
    document_id: int
    document_version_id: int
    source: str
    format: str
    kind: str
    page: int
    table_index: int | None
    bbox: list[float] | None
    rows: list[list[str]] | None
    extracted_text: str
    corrected_text: str | None
    flags: list[dict[str, Any]]
    confidence: float | None
    status: str
    job_id: int | None
    resolved_by: str | None
    resolved_at: datetime | None
    note: str | None
    created_at: datetime
    current: bool  # its version is the document's active one

    @classmethod
    def of_row(cls, **columns: Any) -> ReviewTask:
        """A task from its row, its JSON columns decoded (Django's cursor gives them as text)."""
        for name in ("bbox", "rows", "flags"):
            if isinstance(columns[name], str):
                columns[name] = json.loads(columns[name])
        return cls(**columns)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
