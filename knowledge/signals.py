"""What knowledge tells the apps above it, which it does not import (tests/test_architecture.py).

`chunks_committed` is sent once a run that wrote chunks or vectors of some knowledge bases has
committed (an ingest, an upload's or a reindex's build, a delete), with `knowledge_base_ids`:
the search index (index/) brings those bases' indexes up to date. A receiver's failure must not
fail the run: the run's data is committed, and searches stay exact without the index.

`versions_stored` is sent once new versions of some documents have committed, with
`knowledge_base_id`, `vault_path` and `versions`: a list of StoredVersion, only those whose
parser found something to review (OCR pages, ruled tables). The review queue (review/) makes its
tasks from them; a receiver's failure is reported as the run's warning, never its error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.dispatch import Signal

chunks_committed = Signal()
versions_stored = Signal()


@dataclass(frozen=True)
class ReviewMaterial:
    """What a parser found in one document that a person should check: the pages read by OCR
    (1-based page -> mean confidence), the ruled tables (parsing/formats/pdf_tables.py
    DetectedTable), and the text of those pages (page -> text)."""

    ocr_confidence: dict[int, float] = field(default_factory=dict)
    page_texts: dict[int, str] = field(default_factory=dict)
    tables: list[Any] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.ocr_confidence or self.tables)


@dataclass(frozen=True)
class StoredVersion:
    relative_path: str
    content_hash: str
    review: ReviewMaterial

