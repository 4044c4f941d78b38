"""`rag backup PATH [--json]` — one consistent archive of the database and the uploaded files
(ops/backup.py); `rag restore` reads it back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import get_config
from ops.backup import backup_write


class Command(RagCommand):
    help = ("Write one archive of the whole installation: the database (pg_dump), the uploaded "
            "files and a manifest of versions, counts and checksums.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the archive to write (a new .tar file), or a folder "
                                         "that gets local-rag-backup-<date>.tar")
        parser.add_argument("--json", action="store_true", help="print the manifest as JSON")

    def handle(self, *args: Any, path: str, **options: Any) -> None:
        result = backup_write(path=Path(path), config=get_config(),
                              progress=lambda message: self.stderr.write(message))
        manifest = result.manifest
        if options["json"]:
            self.write_json({"path": str(result.path), "bytes": result.size_bytes, **manifest})
            return
        counts = manifest["counts"]
        uploads = manifest["uploads"]
        self.stdout.write(
            f"wrote {result.path} ({result.size_bytes / 1e6:.1f} MB): "
            f"{counts.get('documents', 0)} documents, {counts.get('chunks', 0)} chunks, "
            f"{counts.get('embeddings', 0)} vectors, {counts.get('knowledge_bases', 0)} knowledge "
            f"bases, {len(uploads['files'])} uploaded files")
        for entry in uploads["missing"]:
            if not entry["expected"]:
                self.stderr.write(f"warning: {entry['member']} was not found; its document is in "
                                  "the archive without its file")
