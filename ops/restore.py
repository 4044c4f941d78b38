"""`rag restore PATH`: an archive of ops/backup.py into an empty database.

Everything is checked before anything is written: the archive's members and manifest
(ops/restore_archive.py: regular files only, bounded sizes, room on the disk), that this
local-rag knows every migration and table of the archive's schema (an older archive is brought
up to date afterwards by `db_init`), that the configured embedder made the archive's vectors,
that the database holds no table and the upload folder no file.

The database is restored in one transaction: pg_restore writes the dump as a script that psql
runs together with ops/restore_sql.py RESTORE_FINISH (upload paths moved to this
installation, row and object counts compared with the manifest), the product's schema files and
ops/restore_catalogue.py's check that the schema holds nothing the product does not
create. Any failure rolls all of it back. psql dies with this process (ops/pg_tools.py
die_with_parent), so a `rag restore` killed with SIGKILL leaves nothing committed.

Uploaded files are unpacked into a staging folder beside the upload folder, renamed into place
only after the commit. The transaction records the restore in `restore_runs`; the staging folder
holds the same id. A staging folder left by a killed restore is finished by the next `rag
restore` when its transaction committed (the uploads moved into place, the schema brought up to
date, the indexes built), and removed when it did not."""

from __future__ import annotations

import fcntl
import json
import re
import secrets
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import psycopg
from django.db import DatabaseError, connection, transaction
from django.db.migrations.loader import MigrationLoader

from audit.records import AuditEvent, audit_record
from core.config import Config
from core.db import DatabaseRefused, PgvectorUnavailable, db_errors_translated
from core.errors import InvalidRequest, first_line
from knowledge.bases import kb_list
from knowledge.db_schema import RAG_TABLES
from knowledge.signals import chunks_committed
from knowledge.upload_store import store_is_bucket, upload_put
from ops import restore_sql as sql
from ops.backup import DUMP
from ops.db_init import db_init
from ops.pg_services import embedded_vector_extension_ensure
from ops.pg_tools import die_with_parent, libpq_environment, pg_tool_path, pg_tool_run
from ops.restore_archive import (
    ArchiveInvalid,
    RestoreRefused,
    archive_members,
    manifest_read,
    member_extract,
    members_bound_check,
)
from ops.restore_catalogue import (
    CATALOGUE_CHECK,
    catalogue_allowed_json,
    restore_schema_files,
)

__all__ = ["ArchiveInvalid", "RestoreRefused", "RestoreResult", "archive_members",
           "restore_read"]

# pg_restore -l lines of the extensions themselves and their comments: pgvector is not a trusted
# extension, so the target has it already (created by a superuser) and the application's role
# may neither create it nor comment on it; pg_trgm (trusted) the restore creates itself first.
EXTENSION_ENTRY = re.compile(r"^\d+; \d+ \d+ (EXTENSION|COMMENT) - (EXTENSION )?\S+")
# The staging folders of restores, beside the upload folder: STAGING_PREFIX + the restore's id.
STAGING_PREFIX = ".restore-"
STAGING_MARK = "restore.json"  # {id, archive, manifest}; its lock is held while a restore runs
STAGING_UPLOADS = "uploads"
CHECK_FAILED = "restore check: the archive's schema holds"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RestoreResult:
    manifest: dict[str, Any]
    uploads_root: Path
    files: int
    archive: str  # the archive restored (an earlier command's, when `resumed`)
    warnings: list[str] = field(default_factory=list)
    resumed: bool = False  # the interrupted restore of an earlier `rag restore`, finished


def restore_read(*, path: Path, config: Config, embedder_change: bool = False,
                 progress: Progress | None = None) -> RestoreResult:
    """Restore the archive at `path` into the configured, empty database and upload folder;
    first finish (or clear away) a restore that was killed before it was done."""
    say = progress or (lambda message: None)
    if not path.is_file():
        raise InvalidRequest(f"{path} is not a file")
    uploads_root = config.upload_dir.resolve()
    resumed = _interrupted_finish(uploads_root=uploads_root, say=say)
    if resumed is not None:
        _restore_audit(resumed)
        return resumed
    try:
        tar = tarfile.open(path, mode="r:")
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise ArchiveInvalid(f"{path} is not a local-rag backup (not a readable tar file: "
                             f"{exc})") from exc
    with tar:
        members = archive_members(tar, path=path)
        manifest = manifest_read(tar, members, path=path)
        _schema_check(manifest)
        _embedder_check(manifest, config=config, embedder_change=embedder_change)
        settings = connection.settings_dict
        _database_empty_check(name=settings["NAME"])
        _uploads_empty_check(uploads_root)
        uploads_root.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        members_bound_check(manifest, members, config=config, work=uploads_root.parent)
        _vector_ensure(config=config, settings=settings)
        with db_errors_translated(), connection.cursor() as cursor:
            # The dump's trigram index (documents' titles) needs its operator class first.
            cursor.execute(sql.RESTORE_TRGM)
        restore_id = secrets.token_hex(8)
        with _staging(uploads_root, restore_id=restore_id, archive=path,
                      manifest=manifest) as stage:
            work = stage.path
            staging = work / STAGING_UPLOADS
            dump = work / DUMP
            say(f"checking {DUMP} ({manifest['database']['bytes']} bytes)")
            member_extract(tar, members, manifest["database"], target=dump)
            files, areas = _uploads_extract(tar, members, manifest, staging=staging,
                                            uploads_root=uploads_root)
            if store_is_bucket(config) and files:
                # Before the database: a bucket that refuses them leaves everything as it was.
                say(f"putting {files} uploaded files in bucket {config.upload_s3_bucket}")
                for file in sorted(path for path in staging.rglob("*") if path.is_file()):
                    upload_put(file, stored_at=file, config=config)
            say(f"restoring the database into {settings['NAME']}")
            _database_load(dump=dump, work=work, settings=settings, manifest=manifest,
                           areas=areas, restore_id=restore_id)
            # Committed: should moving the uploads fail, the next restore finishes the move.
            stage.keep = True
            _uploads_into_place(staging, uploads_root=uploads_root)
            stage.keep = False
    _finish(restore_id=restore_id, say=say)
    result = RestoreResult(manifest=manifest, uploads_root=uploads_root, files=files,
                           archive=str(path), warnings=_warnings(manifest))
    _restore_audit(result)
    return result


def _restore_audit(result: RestoreResult) -> None:
    # Written into the restored database, after the archive's own entries: the log then says
    # when and from what this database was restored.
    counts = result.manifest.get("counts", {})
    audit_record(AuditEvent(
        action="restore.run", object_type="backup", object_name=Path(result.archive).name,
        changes={"archive": result.archive, "resumed": result.resumed,
                 "written_at": result.manifest.get("created_at"),
                 "local_rag_version": result.manifest.get("local_rag_version"),
                 "documents": counts.get("documents", 0), "chunks": counts.get("chunks", 0),
                 "uploaded_files": result.files}))


def _finish(*, restore_id: str, say: Progress) -> None:
    """After the commit and the uploads: the schema brought up to date, the restore marked
    finished, the search indexes built."""
    say("bringing the schema up to date")
    db_init()
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.RESTORE_RUN_FINISHED, [restore_id])
    # Backups carry no search index, and the restored tables are new to every index on this
    # machine (index/store.py): each base's is built from the restored chunks.
    say("building the search indexes")
    chunks_committed.send(sender=restore_read,
                          knowledge_base_ids=[base.id for base in kb_list()])


@dataclass
class _Stage:
    path: Path
    keep: bool = False  # the database holds the restore, the uploads are not yet in place


@contextmanager
def _staging(uploads_root: Path, *, restore_id: str, archive: Path,
             manifest: dict[str, Any]) -> Iterator[_Stage]:
    """A staging folder beside the upload folder, marked with the restore's id and locked for
    as long as this restore runs; removed at the end unless it is to be kept, or the process
    dies (then the next restore finds it)."""
    # Marked and locked before it takes the name other restores look for.
    building = uploads_root.parent / f".staging-{restore_id}"
    work = uploads_root.parent / f"{STAGING_PREFIX}{restore_id}"
    building.mkdir(mode=0o700)
    stage = _Stage(path=work)
    try:
        with open(building / STAGING_MARK, "x", encoding="utf-8") as mark:
            fcntl.flock(mark, fcntl.LOCK_EX | fcntl.LOCK_NB)
            json.dump({"id": restore_id, "archive": str(archive), "manifest": manifest}, mark,
                      ensure_ascii=False)
            mark.flush()
            building.rename(work)
            yield stage
    finally:
        shutil.rmtree(building, ignore_errors=True)
        if not stage.keep:
            shutil.rmtree(work, ignore_errors=True)


def _uploads_into_place(staging: Path, *, uploads_root: Path) -> None:
    if uploads_root.exists():
        shutil.rmtree(uploads_root)  # checked empty of files before the restore
    if staging.exists():
        staging.rename(uploads_root)


def _interrupted_finish(*, uploads_root: Path, say: Progress) -> RestoreResult | None:
    """Deal with the staging folders of restores that were killed: a restore whose
    transaction committed (`restore_runs` holds its id, unfinished) is finished, and its
    result returned; one that committed nothing is removed. A staging folder whose lock is held
    belongs to a restore running now: refused."""
    parent = uploads_root.parent
    leftovers = sorted(parent.glob(f"{STAGING_PREFIX}*")) if parent.is_dir() else []
    for work in leftovers:
        with _leftover_locked(work) as mark:
            if mark is None:
                say(f"removing {work}: a restore that never got as far as its database")
                shutil.rmtree(work, ignore_errors=True)
                continue
            if not _committed(mark["id"]):
                say(f"removing {work}: an interrupted restore of {mark['archive']} that "
                    "committed nothing")
                shutil.rmtree(work, ignore_errors=True)
                continue
            say(f"finishing the interrupted restore of {mark['archive']}: its database "
                "was committed, its uploads are moved into place now")
            _uploads_empty_check(uploads_root)
            _uploads_into_place(work / STAGING_UPLOADS, uploads_root=uploads_root)
            shutil.rmtree(work, ignore_errors=True)
        _finish(restore_id=mark["id"], say=say)
        manifest = mark["manifest"]
        return RestoreResult(manifest=manifest, uploads_root=uploads_root,
                             files=len(manifest["uploads"]["files"]), archive=mark["archive"],
                             warnings=_warnings(manifest), resumed=True)
    return None


@contextmanager
def _leftover_locked(work: Path) -> Iterator[dict[str, Any] | None]:
    """The leftover's mark, locked; None when it has no readable mark."""
    try:
        handle = open(work / STAGING_MARK, encoding="utf-8")
    except OSError:
        yield None
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RestoreRefused(f"another `rag restore` is running (its staging folder {work} "
                                 "is in use); wait for it to end") from None
        try:
            mark = json.load(handle)
            str(mark["id"]), str(mark["archive"]), dict(mark["manifest"])
        except (ValueError, KeyError, TypeError):
            yield None
            return
        yield mark


def _committed(restore_id: str) -> bool:
    """Whether the restore's transaction committed: `restore_runs` holds its id, unfinished."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.RESTORE_RUNS_PRESENT)
        if not cursor.fetchone()[0]:
            return False  # an empty database (or one from before restore_runs)
        cursor.execute(sql.RESTORE_RUN_PENDING, [restore_id])
        return bool(cursor.fetchone()[0])


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
    """pgvector in the target database, as `rag db init` makes sure of it: the embedded
    server's bootstrap superuser creates it, and a role that may create extensions (the Compose
    file's, any superuser) creates it itself."""
    embedded_vector_extension_ensure(config=config, host=settings["HOST"],
                                     port=settings["PORT"], dbname=settings["NAME"])
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.RESTORE_VECTOR_PRESENT)
        if cursor.fetchone()[0]:
            return
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql.RESTORE_VECTOR_CREATE)
    except DatabaseError as exc:
        if not isinstance(exc.__cause__, (psycopg.errors.InsufficientPrivilege,
                                          psycopg.errors.UndefinedFile)):
            with db_errors_translated():
                raise
        raise PgvectorUnavailable(
            f"database {settings['NAME']} has no pgvector extension, and {settings['USER']} "
            f"could not create it ({first_line(exc.__cause__)}); ask a superuser to run "
            f"`CREATE EXTENSION vector;` in {settings['NAME']}, then run `rag restore` again"
        ) from exc


def _uploads_extract(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo],
                     manifest: dict[str, Any], *, staging: Path,
                     uploads_root: Path) -> tuple[int, list[dict[str, str]]]:
    """Unpack the uploaded files into `staging`; (files, [{old, new}] for each upload area)."""
    files = manifest["uploads"]["files"]
    for entry in files:
        relative = PurePosixPath(entry["member"]).relative_to("uploads")
        member_extract(tar, members, entry, target=staging.joinpath(*relative.parts))
    areas = [{"old": area["path"], "new": str(uploads_root / area["dir"])}
             for area in manifest["uploads"]["sources"]]
    return len(files), areas


def _database_load(*, dump: Path, work: Path, settings: dict[str, Any],
                   manifest: dict[str, Any], areas: list[dict[str, str]],
                   restore_id: str) -> None:
    """psql runs, in one transaction: the restore lock, the dump (pg_restore's script on its
    standard input), RESTORE_FINISH, the product's schema files, and the catalogue check with
    the restore's mark. Both programs die with this process."""
    env = libpq_environment(settings, base={})
    toc = pg_tool_run("pg_restore", "--list", str(dump), env=env, what="reading the archive's "
                      "database dump")
    listing = work / "toc.list"
    listing.write_text("".join(line + "\n" for line in toc.splitlines()
                               if not EXTENSION_ENTRY.match(line)), encoding="utf-8")
    start, finish, check = work / "start.sql", work / "finish.sql", work / "check.sql"
    start.write_text(sql.RESTORE_START, encoding="utf-8")
    finish.write_text(sql.RESTORE_FINISH, encoding="utf-8")
    check.write_text(CATALOGUE_CHECK + sql.RESTORE_RUN_MARK, encoding="utf-8")
    schema = [f"--file={path}" for path in restore_schema_files()]
    restore_errors = work / "pg_restore.err"
    psql_output = work / "psql.out"
    with open(restore_errors, "wb") as errors, open(psql_output, "wb") as output:
        script = subprocess.Popen(
            [str(pg_tool_path("pg_restore")), "--no-owner", "--no-privileges",
             f"--use-list={listing}", "--file=-", str(dump)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors,
            preexec_fn=die_with_parent)
        assert script.stdout is not None
        loader = subprocess.Popen(
            [str(pg_tool_path("psql")), "--no-psqlrc", "--quiet", "--single-transaction",
             "--set=ON_ERROR_STOP=1",
             f"--set=restore_map={json.dumps(areas)}",
             f"--set=restore_counts={json.dumps(manifest['counts'])}",
             f"--set=restore_objects={json.dumps(manifest['database']['objects'])}",
             f"--set=restore_allowed={catalogue_allowed_json()}",
             f"--set=restore_id={restore_id}",
             f"--file={start}", "--file=-", f"--file={finish}", *schema, f"--file={check}"],
            env=env, stdin=script.stdout, stdout=output, stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent)
        script.stdout.close()  # psql owns the pipe; pg_restore gets SIGPIPE if psql stops
        loaded = loader.wait()
        written = script.wait()
    if loaded != 0:
        message = _psql_error(psql_output.read_text("utf-8", "replace"))
        if CHECK_FAILED in message:
            raise ArchiveInvalid("the restore was refused and rolled back: "
                                 + message.split("restore check: ", 1)[1])
        raise DatabaseRefused("restoring the database failed and was rolled back: " + message)
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

