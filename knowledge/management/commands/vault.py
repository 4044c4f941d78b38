"""`rag vault list [--json]` and `rag vault forget PATH` — the vaults the index holds."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.errors import InvalidRequest
from knowledge.vault_index import vault_forget, vaults_list


class Command(RagCommand):
    help = "List the indexed vaults, or remove one vault's documents, chunks and embeddings."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["list", "forget"])
        parser.add_argument("path", nargs="?", help="the vault to forget (as indexed)")
        parser.add_argument("--json", action="store_true", help="print the list as JSON")

    def handle(self, *args: Any, action: str, path: str | None, **options: Any) -> None:
        if action == "forget":
            if not path:
                raise InvalidRequest("`rag vault forget` needs the PATH of an indexed vault "
                                     "(see `rag vault list`)")
            vault, removed = vault_forget(vault_path=path)
            self.stdout.write(f"forgot {vault}: {removed} documents removed with their chunks "
                              "and embeddings")
            return
        vaults = vaults_list()
        if options["json"]:
            self.write_json([{"vault_path": v.vault_path, "documents": v.documents,
                              "chunks": v.chunks,
                              "last_run_at": v.last_run_at.isoformat() if v.last_run_at else None,
                              "last_run_status": v.last_run_status} for v in vaults])
            return
        if not vaults:
            self.stdout.write("no vault is indexed yet; run `rag ingest PATH`")
        for v in vaults:
            last = (f"last run {v.last_run_status} {v.last_run_at:%Y-%m-%d %H:%M}"
                    if v.last_run_at else "no run recorded")
            self.stdout.write(f"{v.vault_path}  {v.documents} documents, {v.chunks} chunks, "
                              f"{last}")
