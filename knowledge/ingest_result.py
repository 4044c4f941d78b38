"""What an ingest run is asked (IngestRequest), what it reports (`rag ingest --json`, the run's
row) and how it times its phases; shared by knowledge/ingest.py and knowledge/ingest_fill.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from parsing.vault import DEFAULT_MAX_FILE_BYTES

# Told (files read, files to read) as the run goes: `rag ingest`'s progress bar.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IngestRequest:
    """One ingest run as asked: the vault folder, and how to run it. `wait_for_lock` waits for
    a run of the same folder instead of failing; notes over `max_file_bytes` are skipped;
    `prepare_workers` processes read and chunk (None: as many as the machine has, 0: this
    process); `prune` lets a scan that finds no note delete the folder's documents; a folder
    that is no base's source joins `knowledge_base` (None: `default`); `only` narrows the run
    to these relative paths. `progress` is told as files are read, and `checkpoint` is called
    at every safe point: what it raises stops the run with nothing half-written."""

    vault_path: Path | str
    wait_for_lock: bool = False
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    prepare_workers: int | None = None
    prune: bool = False
    knowledge_base: str | None = None
    only: frozenset[str] | None = None
    progress: Progress | None = None
    checkpoint: Callable[[], None] | None = None
    # Reviewed text of some pages of the one document in `only` (page -> text): it replaces
    # what those pages hold, and the build is a new version even when the file is unchanged.
    page_texts: tuple[tuple[int, str], ...] = ()


@dataclass
class IngestResult:
    """The run summary printed by `rag ingest --json`."""

    run_id: int
    status: str
    vault_path: str
    embedding_provider: str
    embedding_model: str
    documents_added: int = 0
    documents_updated: int = 0
    documents_deleted: int = 0
    documents_skipped: int = 0
    chunks_written: int = 0
    embeddings_written: int = 0
    chunks_lexical_filled: int = 0  # older chunks given (new) lexical terms, without re-embedding
    # Chunks stored without a vector: the embedding server answered none usable for them
    # (embeddings/base.py VectorRefused); the next ingest embeds them again.
    embeddings_skipped: int = 0
    files_seen: int = 0
    files_rejected: int = 0
    ocr_pages: int = 0  # scanned PDF pages recognised in this run
    warnings: list[dict[str, str]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    elapsed_seconds: float = 0.0
    error_summary: str | None = None
    # Endpoint host -> {"texts", "bytes"} sent to embedding servers outside this machine.
    outbound: dict[str, dict[str, int]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        names = ("documents_added", "documents_updated", "documents_deleted", "documents_skipped",
                 "chunks_written", "embeddings_written")
        return {name: getattr(self, name) for name in names}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)



class Timer:
    """Seconds spent per phase of a run (IngestResult.timings)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    def add(self, phase: str, started: float) -> None:
        self.totals[phase] = self.totals.get(phase, 0.0) + time.perf_counter() - started
