"""What knowledge tells the apps above it, which it does not import (tests/test_architecture.py).

`chunks_committed` is sent once a run that wrote chunks or vectors of some knowledge bases has
committed (an ingest, an upload's or a reindex's build, a delete), with `knowledge_base_ids`:
the search index (index/) brings those bases' indexes up to date. A receiver's failure must not
fail the run: the run's data is committed, and searches stay exact without the index."""

from __future__ import annotations

from pathlib import Path

from django.dispatch import Signal

chunks_committed = Signal()

# The idempotent SQL files of the apps above (index/schema.sql), which their migrations apply: a
# restore runs them inside its transaction after knowledge/schema.sql, so that every function
# and trigger of theirs has the product's body (ops/restore_catalogue.py).
_schema_files: list[Path] = []


def schema_file_register(path: Path) -> None:
    if path not in _schema_files:
        _schema_files.append(path)


def schema_files() -> list[Path]:
    return list(_schema_files)
