"""What an ingest run reports (`rag ingest --json`, the run's row) and how it times its phases;
shared by knowledge/ingest.py and knowledge/ingest_fill.py."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any


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
