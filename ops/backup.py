"""`rag backup PATH`: one consistent archive of a local-rag installation.

The archive is a tar file (mode 600: it holds the documents' text and the tokens' hashes) of
  database.pgdump   pg_dump's custom format of the whole database (documents, versions, chunks,
                    embeddings, knowledge bases, grants, token hashes, traces, evaluation data,
                    accounts, jobs), taken by the embedded binaries;
  uploads/<dir>/…   every uploaded file the dumped documents name;
  manifest.json     last: versions, schema, embedder, row counts, catalogue object counts and a
                    sha256 of every other member (ops/restore.py checks them all).
Consistency: one REPEATABLE READ transaction exports its snapshot, pg_dump dumps exactly that
snapshot, and the manifest's counts and the list of uploaded files are read in it too, so the
files in the archive are the ones the dump refers to, whatever ingest or uploads do meanwhile.
The archive is written beside PATH and renamed into place, so a failed backup leaves no file
that looks complete."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import psycopg
from django.db import connection
from psycopg import sql as psql

from audit.records import AuditEvent, audit_record
from core.config import Config
from core.db import snapshot_connection
from core.errors import InvalidRequest
from knowledge.db_schema import NEWEST_CHUNK_COLUMN, RAG_TABLES, schema_ensure
from knowledge.upload_store import upload_ensure
from ops import sql
from ops.pg_tools import libpq_environment, pg_tool_run

ARCHIVE_FORMAT = "local-rag-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
DUMP = "database.pgdump"
UPLOADS_PREFIX = "uploads"
HASH_BLOCK = 1 << 20
# Uploads whose file may be gone on purpose: their deletion job removes the file first.
STATUS_DELETING = "deleting"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BackupResult:
    path: Path
    size_bytes: int
    manifest: dict[str, Any]


def backup_write(*, path: Path, config: Config, progress: Progress | None = None) -> BackupResult:
    """Write the archive to `path` (or to a dated file inside it when it is a folder)."""
    say = progress or (lambda message: None)
    target = _target_path(path)
    schema_ensure()
    settings = connection.settings_dict
    env = libpq_environment(settings, base={})
    descriptor, partial_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                                dir=target.parent)
    partial = Path(partial_name)
    try:
        with tempfile.TemporaryDirectory(prefix=".backup-", dir=target.parent) as work:
            dump = Path(work) / DUMP
            with _snapshot(settings) as (conn, snapshot):
                facts = _facts(conn)
                say(f"dumping database {settings['NAME']} "
                    f"({facts['counts'].get('chunks', 0)} chunks)")
                pg_tool_run("pg_dump", "--format=custom", "--no-owner", "--no-privileges",
                            f"--snapshot={snapshot}", f"--file={dump}", env=env,
                            what="backing up the database")
            with os.fdopen(descriptor, "wb") as raw, tarfile.open(fileobj=raw, mode="w",
                                                                  format=tarfile.PAX_FORMAT) as tar:
                dump_entry = _member_add(tar, source=dump, name=DUMP)
                uploads = _uploads_add(tar, facts["uploads"], say=say, config=config)
                manifest = _manifest(config=config, facts=facts, dump=dump_entry,
                                     uploads=uploads)
                _bytes_add(tar, name=MANIFEST, data=json.dumps(manifest, ensure_ascii=False,
                                                               indent=2).encode())
                raw.flush()
                os.fsync(raw.fileno())
        partial.rename(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    result = BackupResult(path=target, size_bytes=target.stat().st_size, manifest=manifest)
    counts = manifest.get("counts", {})
    # After the snapshot: the archive does not hold its own entry.
    audit_record(AuditEvent(action="backup.run", object_type="backup", object_name=target.name,
                            changes={"path": str(target), "bytes": result.size_bytes,
                                     "documents": counts.get("documents", 0),
                                     "audit_entries": counts.get("audit_logs", 0)}))
    return result


def _target_path(path: Path) -> Path:
    path = path.expanduser()
    if path.is_dir():
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        path = path / f"local-rag-backup-{stamp}.tar"
    if path.exists() or path.is_symlink():
        raise InvalidRequest(f"{path} already exists; name a new file (or a folder, which gets "
                             "a dated file inside)")
    if not path.parent.is_dir():
        raise InvalidRequest(f"{path.parent} is not a folder")
    return path.resolve()


@contextmanager
def _snapshot(settings: dict[str, Any]) -> Iterator[tuple[psycopg.Connection, str]]:
    """A read-only REPEATABLE READ transaction and the name of its exported snapshot; the
    snapshot stays valid (for pg_dump --snapshot) until the block ends."""
    with snapshot_connection(settings, application_name="local-rag backup") as conn:
        row = conn.execute("SELECT pg_export_snapshot()").fetchone()
        assert row is not None
        yield conn, row[0]


def _facts(conn: psycopg.Connection) -> dict[str, Any]:
    """What the manifest says of the snapshot: row counts, catalogue objects, migrations,
    vectors per embedder, the server, and the uploaded files the documents name."""
    tables = [name for (name,) in conn.execute(sql.BACKUP_TABLES).fetchall()]
    counts = {}
    for table in tables:
        row = conn.execute(psql.SQL("SELECT count(*) FROM {}").format(psql.Identifier(table))
                           ).fetchone()
        assert row is not None
        counts[table] = row[0]
    objects = conn.execute(sql.BACKUP_OBJECT_COUNTS).fetchone()
    server = conn.execute(sql.BACKUP_SERVER).fetchone()
    assert objects is not None and server is not None
    migrations: dict[str, list[str]] = {}
    for app, name in conn.execute(sql.BACKUP_MIGRATIONS).fetchall():
        migrations.setdefault(app, []).append(name)
    return {
        "tables": tables,
        "counts": counts,
        "objects": dict(zip(("indexes", "constraints", "triggers"), objects, strict=True)),
        "server_version": server[0], "pgvector_version": server[1], "database": server[2],
        "migrations": migrations,
        "embeddings": [{"provider": provider, "model": model, "dim": dim, "vectors": vectors}
                       for provider, model, dim, vectors
                       in conn.execute(sql.BACKUP_EMBEDDERS).fetchall()],
        "uploads": _upload_files(conn),
        "vaults": [path for (path,) in conn.execute(sql.BACKUP_VAULT_SOURCES).fetchall()],
    }


def _upload_files(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Each upload area with the files of its documents: [{source_id, knowledge_base_id, path,
    dir, files: [(relative_path, status)]}]; `dir` names its folder inside the archive."""
    areas: dict[int, dict[str, Any]] = {}
    used: set[str] = set()
    for source_id, base_id, path in conn.execute(sql.BACKUP_UPLOAD_SOURCES).fetchall():
        folder = Path(path).name or f"kb-{base_id}"
        if folder in used:
            folder = f"{folder}-s{source_id}"
        used.add(folder)
        areas[source_id] = {"source_id": source_id, "knowledge_base_id": base_id, "path": path,
                            "dir": folder, "files": []}
    for source_id, relative_path, status in conn.execute(sql.BACKUP_UPLOAD_FILES).fetchall():
        areas[source_id]["files"].append((relative_path, status))
    return list(areas.values())


def _uploads_add(tar: tarfile.TarFile, areas: list[dict[str, Any]], *,
                 say: Progress, config: Config) -> dict[str, Any]:
    total = sum(len(area["files"]) for area in areas)
    if total:
        say(f"adding {total} uploaded files")
    files, missing, sources = [], [], []
    for area in areas:
        root = Path(area["path"])
        sources.append({key: area[key] for key in ("source_id", "knowledge_base_id", "path",
                                                    "dir")})
        for relative_path, status in area["files"]:
            name = f"{UPLOADS_PREFIX}/{area['dir']}/{relative_path}"
            source = root / relative_path
            try:
                if status != STATUS_DELETING:  # with UPLOAD_STORE=s3 this cache may lack it
                    upload_ensure(source, config=config)
                files.append(_member_add(tar, source=source, name=name))
            except FileNotFoundError:
                missing.append({"member": name, "status": status,
                                "expected": status == STATUS_DELETING})
    return {"sources": sources, "files": files, "missing": missing}


def _member_add(tar: tarfile.TarFile, *, source: Path, name: str) -> dict[str, Any]:
    """Add one file under `name`; its manifest entry (name, bytes, sha256). The file is read
    twice (hash, then copy) from one open handle, so both see the same bytes."""
    with open(source, "rb") as handle:
        digest = hashlib.sha256()
        size = 0
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
            size += len(block)
        handle.seek(0)
        info = tarfile.TarInfo(name)
        info.size = size
        info.mode = 0o600
        info.mtime = int(os.fstat(handle.fileno()).st_mtime)
        tar.addfile(info, handle)
    return {"member": name, "bytes": size, "sha256": digest.hexdigest()}


def _bytes_add(tar: tarfile.TarFile, *, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    info.mtime = int(datetime.now(UTC).timestamp())
    tar.addfile(info, io.BytesIO(data))


def _manifest(*, config: Config, facts: dict[str, Any], dump: dict[str, Any],
              uploads: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": ARCHIVE_FORMAT,
        "format_version": FORMAT_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "local_rag_version": package_version("local-rag"),
        "database": {**dump, "name": facts["database"], "server_version": facts["server_version"],
                     "pgvector_version": facts["pgvector_version"], "objects": facts["objects"]},
        "schema": {"rag_tables": list(RAG_TABLES), "newest_chunk_column": NEWEST_CHUNK_COLUMN,
                   "tables": facts["tables"], "migrations": facts["migrations"]},
        "embedder": {"configured": {"provider": config.embedding_provider,
                                    "model": config.embedding_model,
                                    "dim": config.embedding_dim},
                     "stored": facts["embeddings"]},
        "counts": facts["counts"],
        "vaults": facts["vaults"],
        "uploads": {"root": str(config.upload_dir.resolve()),
                    **uploads},
    }
