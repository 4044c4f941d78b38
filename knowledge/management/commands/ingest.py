"""`rag ingest [PATH] [--kb SLUG] [--json] [--wait]` — index a vault: Markdown / Obsidian notes
and PDF, DOCX and TXT documents."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import Config, get_config
from core.errors import InvalidRequest
from core.progress import ProgressBar
from knowledge.bases import kb_get
from knowledge.ingest import IngestRequest, IngestResult, vault_ingest


class Command(RagCommand):
    help = "Index a vault of notes (.md) and documents (.pdf, .docx, .txt): new and changed " \
           "files are (re)built, unchanged ones skipped, deleted ones removed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", help="vault folder (default: VAULT_PATH)")
        parser.add_argument("--json", action="store_true", help="print the run summary as JSON")
        parser.add_argument("--wait", action="store_true",
                            help="wait for a running ingest of the same vault instead of failing")
        parser.add_argument("--prune", action="store_true",
                            help="allow removing every note of the vault when the scan finds "
                                 "none (refused otherwise: an unmounted or emptied folder looks "
                                 "the same)")
        parser.add_argument("--kb", default=None, metavar="SLUG",
                            help="with PATH: ingest it into this knowledge base (it becomes "
                                 "one of its sources); without PATH: ingest every source of "
                                 "the knowledge base")
        parser.add_argument("--max-file-mb", type=float, default=5.0,
                            help="skip notes larger than this (default 5 MB; PDF, DOCX and TXT "
                                 "files: RAG_DOCUMENT_MAX_MB)")

    def handle(self, *args: Any, path: str | None, **options: Any) -> None:
        config = get_config()
        slug = options["kb"]
        if slug is not None and path is None:
            base = kb_get(slug)
            if not base.sources:
                raise InvalidRequest(f"the knowledge base {slug!r} has no source yet; add one "
                                     f"with `rag kb add-source {slug} PATH`")
            results = [self._ingest(source.path, config=config, options=options)
                       for source in base.sources]
            if options["json"]:
                self.write_json([result.as_dict() for result in results])
            return
        result = self._ingest(path or config.vault_path, config=config, options=options)
        if options["json"]:
            self.write_json(result.as_dict())

    def _ingest(self, path: Path | str, *, config: Config,
                options: dict[str, Any]) -> IngestResult:
        bar = ProgressBar(label="ingest", stream=sys.stderr)
        try:
            result = vault_ingest(IngestRequest(
                vault_path=path, wait_for_lock=options["wait"], prune=options["prune"],
                max_file_bytes=int(options["max_file_mb"] * 1024 * 1024),
                knowledge_base=options["kb"], progress=bar.update), config=config)
        finally:
            bar.close()
        self._report(result, as_json=options["json"])
        return result

    def _report(self, result: IngestResult, *, as_json: bool) -> None:
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning['file']}: {warning['reason']}")
        if as_json:
            return
        ocr = f"; {result.ocr_pages} scanned pages read by OCR" if result.ocr_pages else ""
        self.stdout.write(
            f"ingested {result.vault_path}: {result.documents_added} added, "
            f"{result.documents_updated} updated, {result.documents_deleted} deleted, "
            f"{result.documents_skipped} unchanged; {result.chunks_written} chunks and "
            f"{result.embeddings_written} embeddings written{ocr}; {len(result.warnings)} "
            f"warnings; {result.elapsed_seconds:.2f}s (run {result.run_id})")
