"""`rag restore PATH [--embedder-change]` — an archive of `rag backup` into an empty database
and upload folder (ops/restore.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import get_config
from ops.restore import restore_read


class Command(RagCommand):
    help = ("Restore an archive of `rag backup` into the configured database, which must be "
            "empty (e.g. right after `rag pg start` in a new project folder), and its upload "
            "folder.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="an archive written by `rag backup`")
        parser.add_argument("--embedder-change", action="store_true",
                            help="restore even though the configured embedder did not make the "
                                 "archive's vectors (then embed again with `rag ingest`)")

    def handle(self, *args: Any, path: str, **options: Any) -> None:
        result = restore_read(path=Path(path), config=get_config(),
                              embedder_change=options["embedder_change"],
                              progress=lambda message: self.stderr.write(message))
        counts = result.manifest["counts"]
        if result.resumed and Path(result.archive) != Path(path):
            self.stderr.write(f"warning: {path} was not restored: the database now holds the "
                              f"interrupted restore of {result.archive}, finished first")
        what = "finished the interrupted restore of" if result.resumed else "restored"
        self.stdout.write(
            f"{what} {result.archive} (written {result.manifest['created_at']} by local-rag "
            f"{result.manifest['local_rag_version']}): {counts.get('documents', 0)} documents, "
            f"{counts.get('chunks', 0)} chunks, {counts.get('embeddings', 0)} vectors, "
            f"{result.files} uploaded files in {result.uploads_root}")
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
