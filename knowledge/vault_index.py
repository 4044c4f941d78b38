"""The vaults the index holds: listing them, refusing one nested in another, forgetting one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.db import connection, transaction

from core.db import db_errors_translated
from core.errors import LocalRagError
from knowledge import sql, store
from parsing.vault import VaultNotFound


class VaultOverlap(LocalRagError):
    code = "vault_overlap"


@dataclass(frozen=True)
class IndexedVault:
    vault_path: str
    documents: int
    chunks: int
    last_run_at: datetime | None
    last_run_status: str | None


def vaults_list() -> list[IndexedVault]:
    """Every vault with documents in the index, with counts and its latest ingest run."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.VAULTS)
        return [IndexedVault(*row) for row in cursor.fetchall()]


def vault_overlap_check(*, vault_path: str) -> None:
    """Refuse a vault inside, or containing, another indexed vault or a registered source:
    their notes would come back twice under two paths, or a base's folder would be read into
    another base."""
    root = Path(vault_path)
    with connection.cursor() as cursor:
        cursor.execute(sql.INDEXED_VAULT_PATHS)
        indexed = sorted(Path(row[0]) for row in cursor.fetchall())
    for other in indexed:
        if other == root:
            continue
        if root.is_relative_to(other) or other.is_relative_to(root):
            relation = "inside" if root.is_relative_to(other) else "around"
            raise VaultOverlap(
                f"{root} is {relation} the indexed vault {other}; index one of them only (to "
                f"drop the other, run `rag vault forget {other}`)",
                details={"vault_path": str(root), "other_vault_path": str(other)})


def vault_forget(*, vault_path: Path | str) -> tuple[str, int]:
    """Remove one vault's documents, chunks and embeddings (and its registration as a
    knowledge base's source) in one transaction; returns the vault's canonical path and the
    number of documents removed. The folder need not exist."""
    path = str(Path(vault_path).expanduser().resolve())
    with db_errors_translated():
        indexed = {vault.vault_path for vault in vaults_list()}
        if path not in indexed:
            raise VaultNotFound(f"no indexed vault at {path}; `rag vault list` shows them",
                                details={"path": path})
        # Wait for a running ingest of this vault rather than delete under it.
        store.vault_lock(vault_path=path, wait=True)
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql.FORGET_VAULT, [path])
                removed = cursor.fetchone()[0]
                cursor.execute(sql.FORGET_VAULT_SOURCE, [path])
        finally:
            store.vault_unlock(vault_path=path)
    return path, removed
