"""`rag restore PATH`: an archive of knowledge/backup.py into an empty database.

Everything is checked before anything is written: the manifest's format, that this local-rag
knows every migration and table of the archive's schema (an older archive is brought up to
date afterwards by `db_init`), that the configured embedder made the archive's vectors, that
the database holds no table and the upload folder no file. The archive is hostile until
checked: only the members the manifest names are read, each a regular file under a plain
relative name, and each must match its size and sha256 before it is used.

The database is restored in one transaction: pg_restore writes the dump as a script that psql
runs together with knowledge/sql.py RESTORE_FINISH (upload paths moved to this installation,
row and object counts compared with the manifest). Any failure rolls all of it back; uploaded
files are unpacked into a staging folder that is renamed into place only after the commit."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.db import connection
from django.db.migrations.loader import MigrationLoader

from core.config import Config
from core.db import DatabaseRefused, PgvectorUnavailable, db_errors_translated
from core.errors import InvalidRequest, LocalRagError
from core.pg_services import embedded_vector_extension_ensure
from core.pg_tools import libpq_environment, pg_tool_path, pg_tool_run
from knowledge import sql
from knowledge.backup import ARCHIVE_FORMAT, DUMP, FORMAT_VERSION, HASH_BLOCK, MANIFEST
from knowledge.bases import kb_list
from knowledge.db_schema import RAG_TABLES, db_init
from knowledge.signals import chunks_committed
from knowledge.upload_store import store_is_bucket, upload_put

MANIFEST_MAX_BYTES = 16 << 20
# Members read at most: an upload area of a million files is far beyond one installation's.
MEMBERS_MAX = 1_000_000
# pg_restore -l lines of the extensions themselves and their comments: pgvector is not a trusted
# extension, so the target has it already (created by a superuser) and the application's role
# may neither create it nor comment on it; pg_trgm (trusted) the restore creates itself first.
EXTENSION_ENTRY = re.compile(r"^\d+; \d+ \d+ (EXTENSION|COMMENT) - (EXTENSION )?\S+")

Progress = Callable[[str], None]


class RestoreRefused(LocalRagError):
    code = "restore_refused"


class ArchiveInvalid(LocalRagError):
    code = "archive_invalid"


@dataclass(frozen=True)
class RestoreResult:
    manifest: dict[str, Any]
    uploads_root: Path
    files: int
    warnings: list[str] = field(default_factory=list)


def restore_read(*, path: Path, config: Config, embedder_change: bool = False,
                 progress: Progress | None = None) -> RestoreResult:
    """Restore the archive at `path` into the configured, empty database and upload folder."""
    say = progress or (lambda message: None)
    if not path.is_file():
        raise InvalidRequest(f"{path} is not a file")
    try:
        tar = tarfile.open(path, mode="r:")
    except (OSError, tarfile.TarError) as exc:
        raise ArchiveInvalid(f"{path} is not a local-rag backup (not a readable tar file: "
                             f"{exc})") from exc
    with tar:
        members = archive_members(tar, path=path)
        manifest = _manifest_read(tar, members, path=path)
        _schema_check(manifest)
        _embedder_check(manifest, config=config, embedder_change=embedder_change)
        settings = connection.settings_dict
        _database_empty_check(name=settings["NAME"])
        uploads_root = config.upload_dir.resolve()
        _uploads_empty_check(uploads_root)
        _vector_ensure(config=config, settings=settings)
        with db_errors_translated(), connection.cursor() as cursor:
            # The dump's trigram index (documents' titles) needs its operator class first.
            cursor.execute(sql.RESTORE_TRGM)
        uploads_root.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.TemporaryDirectory(prefix=".restore-", dir=uploads_root.parent) as work:
            staging = Path(work) / "uploads"
            dump = Path(work) / DUMP
            say(f"checking {DUMP} ({manifest['database']['bytes']} bytes)")
            _member_extract(tar, members, manifest["database"], target=dump)
            files, areas = _uploads_extract(tar, members, manifest, staging=staging,
                                            uploads_root=uploads_root)
            if store_is_bucket(config) and files:
                # Before the database: a bucket that refuses them leaves everything as it was.
                say(f"putting {files} uploaded files in bucket {config.upload_s3_bucket}")
                for file in sorted(path for path in staging.rglob("*") if path.is_file()):
                    upload_put(file, stored_at=file, config=config)
            say(f"restoring the database into {settings['NAME']}")
            _database_load(dump=dump, work=Path(work), settings=settings, manifest=manifest,
                           areas=areas)
            if uploads_root.exists():
                shutil.rmtree(uploads_root)  # checked empty of files above
            if staging.exists():
                staging.rename(uploads_root)
    say("bringing the schema up to date")
    db_init()
    # Backups carry no search index, and the restored tables are new to every index on this
    # machine (index/store.py): each base's is built from the restored chunks.
    say("building the search indexes")
    chunks_committed.send(sender=restore_read,
                          knowledge_base_ids=[base.id for base in kb_list()])
    return RestoreResult(manifest=manifest, uploads_root=uploads_root, files=files,
                         warnings=_warnings(manifest))


def archive_members(tar: tarfile.TarFile, *, path: Path,
                    limit: int = MEMBERS_MAX) -> dict[str, tarfile.TarInfo]:
    """The archive's members by name, read header by header; refused past `limit`, so a
    hostile tar of millions of empty members cannot fill the memory with their headers."""
    members: dict[str, tarfile.TarInfo] = {}
    while (member := tar.next()) is not None:
        if len(members) >= limit:
            raise ArchiveInvalid(f"{path} holds more than {limit:,} members; a local-rag backup "
                                 "holds one per uploaded file plus two")
        members[member.name] = member
    return members


def _manifest_read(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], *,
                   path: Path) -> dict[str, Any]:
    info = members.get(MANIFEST)
    if info is None or not info.isreg() or info.size > MANIFEST_MAX_BYTES:
        raise ArchiveInvalid(f"{path} is not a local-rag backup: it has no {MANIFEST}")
    handle = tar.extractfile(info)
    assert handle is not None  # a regular file
    try:
        manifest = json.loads(handle.read())
    except ValueError as exc:
        raise ArchiveInvalid(f"{path}: {MANIFEST} is not JSON ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise ArchiveInvalid(f"{path} is not a local-rag backup (its {MANIFEST} is of another "
                             "format)")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise RestoreRefused(
            f"{path} is a backup of format {version}, written by local-rag "
            f"{manifest.get('local_rag_version')}; this local-rag reads format {FORMAT_VERSION}. "
            "Restore it with that version or a newer one.")
    try:
        _manifest_shape_check(manifest)
    except (KeyError, TypeError, ValueError) as exc:
        raise ArchiveInvalid(f"{path}: {MANIFEST} is incomplete ({exc!r})") from exc
    return manifest


def _manifest_shape_check(manifest: dict[str, Any]) -> None:
    _entry_check(manifest["database"])
    if manifest["database"]["member"] != DUMP:
        raise ValueError(f"the database member must be {DUMP}")
    for table, rows in manifest["counts"].items():
        if not isinstance(table, str) or not isinstance(rows, int):
            raise ValueError("counts must map table names to numbers")
    for key in ("indexes", "constraints", "triggers"):
        int(manifest["database"]["objects"][key])
    for area in manifest["uploads"]["sources"]:
        _plain_name(area["dir"])
        str(area["path"])
    for entry in manifest["uploads"]["files"]:
        _entry_check(entry)
        parts = PurePosixPath(entry["member"]).parts
        if parts[0] != "uploads" or len(parts) < 3:
            raise ValueError(f"{entry['member']!r} is not under uploads/<folder>/")


def _entry_check(entry: dict[str, Any]) -> None:
    name = entry["member"]
    if not isinstance(name, str) or not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]):
        raise ValueError(f"member entry {entry!r} lacks a name or a sha256")
    if not isinstance(entry["bytes"], int) or entry["bytes"] < 0:
        raise ValueError(f"member entry {name!r} lacks its size")
    for part in PurePosixPath(name).parts:
        _plain_name(part)
    if name.startswith("/"):
        raise ValueError(f"member {name!r} is an absolute path")


def _plain_name(part: str) -> None:
    if not isinstance(part, str) or part in ("", ".", "..") or "/" in part or "\x00" in part:
        raise ValueError(f"{part!r} is not a plain file or folder name")


def _schema_check(manifest: dict[str, Any]) -> None:
    """Refuse an archive whose schema is newer than this local-rag's."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    known = set(loader.disk_migrations)
    unknown = sorted(f"{app}.{name}" for app, names in manifest["schema"]["migrations"].items()
                     for name in names if (app, name) not in known)
    tables = sorted(set(manifest["schema"]["rag_tables"]) - set(RAG_TABLES))
    if unknown or tables:
        what = ", ".join([*unknown[:5], *tables[:5]])
        raise RestoreRefused(
            f"the archive's schema is newer than this local-rag's (it has {what}, which this "
            f"version does not know); it was written by local-rag "
            f"{manifest.get('local_rag_version')}: restore it with that version or a newer one",
            details={"unknown_migrations": unknown, "unknown_tables": tables})


def _embedder_check(manifest: dict[str, Any], *, config: Config, embedder_change: bool) -> None:
    stored = manifest["embedder"]["stored"]
    mine = (config.embedding_provider, config.embedding_model, config.embedding_dim)
    if not stored or embedder_change:
        return
    if any((entry["provider"], entry["model"], entry["dim"]) == mine for entry in stored):
        return
    theirs = "; ".join(f"{entry['provider']} / {entry['model']} / {entry['dim']} "
                       f"({entry['vectors']} vectors)" for entry in stored)
    first = stored[0]
    raise RestoreRefused(
        f"the archive's vectors were made by {theirs}, and this installation embeds with "
        f"{mine[0]} / {mine[1]} / {mine[2]}, so no search would find them. Set "
        f"EMBEDDING_PROVIDER={first['provider']} EMBEDDING_MODEL={first['model']} "
        f"EMBEDDING_DIM={first['dim']} (in .env) and restore again, or pass --embedder-change "
        "to restore anyway and then embed again with `rag ingest` for each vault",
        details={"archive": stored, "configured": list(mine)})


def _database_empty_check(*, name: str) -> None:
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.RESTORE_TABLES_PRESENT)
        count, example = cursor.fetchone()
    if count:
        raise RestoreRefused(
            f"database {name} is not empty ({count} tables, e.g. {example}); a restore needs an "
            "empty database: a fresh `rag pg start` in a new project folder (or after moving "
            ".local/pg aside), or `CREATE DATABASE` on your own server, then `rag restore` "
            "before `rag db init`", details={"database": name, "tables": count})


def _uploads_empty_check(root: Path) -> None:
    if root.exists() and any(path.is_file() or path.is_symlink() for path in root.rglob("*")):
        raise RestoreRefused(f"the upload folder {root} already holds files; a restore writes "
                             "the archive's uploads there: move it aside first",
                             details={"uploads_root": str(root)})


def _vector_ensure(*, config: Config, settings: dict[str, Any]) -> None:
    embedded_vector_extension_ensure(config=config, host=settings["HOST"],
                                     port=settings["PORT"], dbname=settings["NAME"])
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.RESTORE_VECTOR_PRESENT)
        present = cursor.fetchone()[0]
    if not present:
        raise PgvectorUnavailable(
            f"database {settings['NAME']} has no pgvector extension, and {settings['USER']} may "
            f"not create it; ask a superuser to run `CREATE EXTENSION vector;` in "
            f"{settings['NAME']}, then run `rag restore` again")


def _member_extract(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo],
                    entry: dict[str, Any], *, target: Path) -> None:
    """Copy one member to `target`, refusing it unless its size and sha256 are the manifest's."""
    name = entry["member"]
    info = members.get(name)
    if info is None or not info.isreg():
        raise ArchiveInvalid(f"the archive lacks {name}, which its manifest lists")
    if info.size != entry["bytes"]:
        raise ArchiveInvalid(f"{name} holds {info.size} bytes, its manifest says {entry['bytes']}")
    source = tar.extractfile(info)
    assert source is not None
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    digest = _copy_hashed(source, target)
    if digest != entry["sha256"]:
        target.unlink()
        raise ArchiveInvalid(f"{name} does not match its checksum in the manifest: the archive "
                             "is damaged or was changed after it was written")


def _copy_hashed(source: IO[bytes], target: Path) -> str:
    digest = hashlib.sha256()
    with open(target, "xb") as out:
        target.chmod(0o600)
        while block := source.read(HASH_BLOCK):
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


def _uploads_extract(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo],
                     manifest: dict[str, Any], *, staging: Path,
                     uploads_root: Path) -> tuple[int, list[dict[str, str]]]:
    """Unpack the uploaded files into `staging`; (files, [{old, new}] for each upload area)."""
    files = manifest["uploads"]["files"]
    for entry in files:
        relative = PurePosixPath(entry["member"]).relative_to("uploads")
        _member_extract(tar, members, entry, target=staging.joinpath(*relative.parts))
    areas = [{"old": area["path"], "new": str(uploads_root / area["dir"])}
             for area in manifest["uploads"]["sources"]]
    return len(files), areas


def _database_load(*, dump: Path, work: Path, settings: dict[str, Any],
                   manifest: dict[str, Any], areas: list[dict[str, str]]) -> None:
    env = libpq_environment(settings, base={})
    toc = pg_tool_run("pg_restore", "--list", str(dump), env=env, what="reading the archive's "
                      "database dump")
    listing = work / "toc.list"
    listing.write_text("".join(line + "\n" for line in toc.splitlines()
                               if not EXTENSION_ENTRY.match(line)), encoding="utf-8")
    finish = work / "finish.sql"
    finish.write_text(sql.RESTORE_FINISH, encoding="utf-8")
    restore_errors = work / "pg_restore.err"
    psql_output = work / "psql.out"
    with open(restore_errors, "wb") as errors, open(psql_output, "wb") as output:
        script = subprocess.Popen(
            [str(pg_tool_path("pg_restore")), "--no-owner", "--no-privileges",
             f"--use-list={listing}", "--file=-", str(dump)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors)
        assert script.stdout is not None
        loader = subprocess.Popen(
            [str(pg_tool_path("psql")), "--no-psqlrc", "--quiet", "--single-transaction",
             "--set=ON_ERROR_STOP=1",
             f"--set=restore_map={json.dumps(areas)}",
             f"--set=restore_counts={json.dumps(manifest['counts'])}",
             f"--set=restore_objects={json.dumps(manifest['database']['objects'])}",
             "--file=-", f"--file={finish}"],
            env=env, stdin=script.stdout, stdout=output, stderr=subprocess.STDOUT)
        script.stdout.close()  # psql owns the pipe; pg_restore gets SIGPIPE if psql stops
        loaded = loader.wait()
        written = script.wait()
    if loaded != 0:
        raise DatabaseRefused("restoring the database failed and was rolled back: "
                           + _psql_error(psql_output.read_text("utf-8", "replace")))
    if written != 0:
        raise DatabaseRefused("pg_restore failed after the database was restored and checked: "
                           + restore_errors.read_text("utf-8", "replace").strip()[-800:])


def _psql_error(output: str) -> str:
    lines = [line for line in output.splitlines() if "ERROR" in line or "FATAL" in line]
    return "; ".join(lines[:3]) or output.strip()[-800:]


def _warnings(manifest: dict[str, Any]) -> list[str]:
    warnings = [f"vault folder {folder} is not on this machine: its documents stay searchable; "
                "`rag ingest` of that folder needs it back"
                for folder in manifest.get("vaults", []) if not Path(folder).is_dir()]
    if manifest["counts"].get("vector_index_tuning"):
        warnings.append("the HNSW index was rebuilt: `rag db index --status` measures its "
                        "recall again (until then search scans vectors exactly)")
    missing = [entry["member"] for entry in manifest["uploads"].get("missing", [])
               if not entry.get("expected")]
    if missing:
        warnings.append(f"{len(missing)} uploaded files were missing when the backup was made "
                        f"(e.g. {missing[0]}); their documents stay searchable, a reindex of "
                        "them fails")
    return warnings

