"""`rag restore` against archives made to hurt (ops/restore_archive.py,
ops/restore_catalogue.py) and against being killed (ops/restore.py): each refusal
is `archive_invalid` with exit 2 and writes nothing, and a restore is all or nothing."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import psycopg
import pytest

from core.dburl import database_settings
from tests.conftest import cli_env
from tests.harness import ROOT
from tests.ops.test_restore import restore, rewritten, tables_in


def connect(url: str) -> psycopg.Connection:
    settings = database_settings(url)
    return psycopg.connect(host=settings["HOST"], user=settings["USER"],
                           password=settings["PASSWORD"], dbname=settings["NAME"],
                           autocommit=True)


def refused(result: subprocess.CompletedProcess, *phrases: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "error [archive_invalid]" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr


def nothing_written(project: Path, url: str) -> None:
    assert tables_in(url) == 0
    local = project / ".local"
    assert not local.exists() or not [path for path in local.rglob("*") if path.is_file()]


def tar_of(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


# Members bounded before they are written --------------------------------------------------------


def test_a_sparse_member_is_refused_before_a_byte_of_it_is_written(run_cli, project, tmp_path,
                                                                    empty_database):
    # A 3 GiB file of holes: GNU tar stores it in a few kilobytes.
    folder = tmp_path / "sparse"
    folder.mkdir()
    with open(folder / "database.pgdump", "wb") as big:
        big.truncate(3 << 30)
    (folder / "manifest.json").write_text("{}")
    hostile = tmp_path / "sparse.tar"
    subprocess.run(["tar", "--sparse", "--format=gnu", "-cf", str(hostile), "-C", str(folder),
                    "database.pgdump", "manifest.json"], check=True)
    assert hostile.stat().st_size < 1 << 20
    result = restore(run_cli, hostile, url=empty_database, cwd=project)
    refused(result, "database.pgdump is a sparse member (it stands for 3,221,225,472 bytes)")
    nothing_written(project, empty_database)


def test_links_and_other_special_members_are_refused(run_cli, project, tmp_path, empty_database):
    for kind in (tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.DIRTYPE):
        hostile = tmp_path / f"special-{kind!r}.tar"
        with tarfile.open(hostile, "w") as tar:
            info = tarfile.TarInfo("uploads/kb-1/notes.md")
            info.type = kind
            info.linkname = "/etc/passwd"
            tar.addfile(info)
            manifest = tarfile.TarInfo("manifest.json")
            tar.addfile(manifest, io.BytesIO(b""))
        result = restore(run_cli, hostile, url=empty_database, cwd=project)
        refused(result, "uploads/kb-1/notes.md is a", "regular files only")
    nothing_written(project, empty_database)


def test_an_upload_over_the_limit_of_its_kind_is_refused_before_it_is_written(
        archive, run_cli, project, tmp_path, empty_database):
    import hashlib

    data = b"%PDF-1.7\n" + b"0" * (2 << 20)

    def listed(content: dict) -> None:
        content["uploads"]["sources"].append({"source_id": 9, "knowledge_base_id": 1,
                                              "path": "/elsewhere/uploads/kb-9", "dir": "kb-9"})
        content["uploads"]["files"].append({"member": "uploads/kb-9/report.pdf",
                                            "bytes": len(data),
                                            "sha256": hashlib.sha256(data).hexdigest()})

    large = rewritten(archive, tmp_path / "large.tar", manifest=listed)
    with tarfile.open(large, "a") as tar:
        info = tarfile.TarInfo("uploads/kb-9/report.pdf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    result = run_cli("restore", str(large), cwd=project,
                     env=cli_env(DATABASE_URL=empty_database, RAG_DOCUMENT_MAX_MB="1"))
    refused(result, "uploads/kb-9/report.pdf holds 2,097,161 bytes, more than the 1,048,576-byte "
                    "limit of an upload of its kind")
    nothing_written(project, empty_database)


def test_room_on_the_disk_is_checked_before_anything_is_unpacked(monkeypatch, tmp_path):
    from core.config import get_config
    from ops import restore_archive

    manifest = {"database": {"member": "database.pgdump", "bytes": 5 << 20},
                "uploads": {"files": []}}
    info = tarfile.TarInfo("database.pgdump")
    info.size = 5 << 20
    usage = restore_archive.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(restore_archive.shutil, "disk_usage",
                        lambda path: usage._replace(free=100 << 20))
    with pytest.raises(restore_archive.RestoreRefused, match="its disk has 104,857,600 free"):
        restore_archive.members_bound_check(manifest, {"database.pgdump": info},
                                            config=get_config(), work=tmp_path)
    monkeypatch.setattr(restore_archive.shutil, "disk_usage",
                        lambda path: usage._replace(free=1 << 30))
    restore_archive.members_bound_check(manifest, {"database.pgdump": info},
                                        config=get_config(), work=tmp_path)


# Damaged archives: archive_invalid, never a traceback -------------------------------------------


def test_a_truncated_archive_is_archive_invalid(archive, run_cli, project, tmp_path,
                                               empty_database):
    data = archive.read_bytes()
    with tarfile.open(archive) as tar:
        manifest = tar.getmember("manifest.json")
    # In the dump, between members, and inside the manifest (the last member).
    for length in (len(data) * 3 // 10, manifest.offset + 100,
                   manifest.offset_data + manifest.size // 2):
        cut = tmp_path / f"cut-{length}.tar"
        cut.write_bytes(data[:length])
        result = restore(run_cli, cut, url=empty_database, cwd=project)
        refused(result)
    nothing_written(project, empty_database)


def test_a_manifest_nested_200000_deep_is_archive_invalid(run_cli, project, tmp_path,
                                                         empty_database):
    deep = tar_of(tmp_path / "deep.tar", {"manifest.json": b"[" * 200_000 + b"]" * 200_000})
    refused(restore(run_cli, deep, url=empty_database, cwd=project),
            "manifest.json nests deeper than any local-rag manifest")
    nothing_written(project, empty_database)


def test_a_manifest_listing_a_file_below_another_is_archive_invalid(archive, run_cli, project,
                                                                   tmp_path, empty_database):
    def both(content: dict) -> None:
        for name in ("uploads/kb-1/a", "uploads/kb-1/a/b"):
            content["uploads"]["files"].append({"member": name, "bytes": 0,
                                                "sha256": "e3b0c44298fc1c149afbf4c8996fb924"
                                                          "27ae41e4649b934ca495991b7852b855"})

    hostile = rewritten(archive, tmp_path / "nested.tar", manifest=both)
    refused(restore(run_cli, hostile, url=empty_database, cwd=project),
            "'uploads/kb-1/a/b' lies below 'uploads/kb-1/a', which is a file too")
    nothing_written(project, empty_database)


# The restored schema is the product's -----------------------------------------------------------


HOSTILE_OBJECTS = [
    "CREATE SCHEMA stranger",
    "CREATE FUNCTION stranger.noop() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    """CREATE FUNCTION public.grant_stranger() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE NOTICE 'stranger granted maintainer on %', NEW.slug; RETURN NEW; END $$""",
    """CREATE TRIGGER grant_stranger AFTER INSERT ON knowledge_bases
       FOR EACH ROW EXECUTE FUNCTION grant_stranger()""",
    # A second function under a product function's name: no CREATE OR REPLACE reaches it.
    "CREATE FUNCTION public.search_index_log(integer) RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE VIEW public.every_token AS SELECT 1 AS one",
]


def rebacked_restored(statements: list[str], *, archive: Path, run_cli, project: Path,
                      tmp_path: Path,
                      new_database) -> tuple[Path, str, subprocess.CompletedProcess]:
    """A self-consistent archive with `statements` run in it: the archive restored into a new
    database, the statements run there, `rag backup` of it; then that backup restored into
    another new database, from another project folder. (that folder, its database's URL, the
    restore)."""
    source = new_database()
    assert restore(run_cli, archive, url=source, cwd=project).returncode == 0
    with connect(source) as conn:
        for statement in statements:
            conn.execute(statement)
    rebacked = tmp_path / "rebacked.tar"
    made = run_cli("backup", str(rebacked), cwd=project, env=cli_env(DATABASE_URL=source))
    assert made.returncode == 0, made.stderr
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text("[project]\nname='scratch'\n")
    (other / ".env.sample").write_text("")
    target = new_database()
    return other, target, restore(run_cli, rebacked, url=target, cwd=other)


def test_an_archive_carrying_objects_of_its_own_is_refused(archive, run_cli, project,
                                                           tmp_path, new_database):
    # A self-consistent archive: restored, given objects of its own, and backed up again.
    other, target, result = rebacked_restored(HOSTILE_OBJECTS, archive=archive, run_cli=run_cli,
                                              project=project, tmp_path=tmp_path,
                                              new_database=new_database)
    refused(result, "the restore was refused and rolled back: the archive's schema holds 7 "
                    "objects local-rag does not create:", "schema stranger",
            "function stranger.noop()", "function search_index_log()",
            "function grant_stranger()", "function search_index_log(integer)",
            "trigger grant_stranger ON knowledge_bases", "view every_token")
    nothing_written(other, target)


def test_an_archived_product_function_gets_the_products_body(archive, run_cli, project,
                                                            tmp_path, new_database):
    # Same name and arguments as the product's: the restore's schema run replaces its body.
    _, target, result = rebacked_restored(
        ["""CREATE OR REPLACE FUNCTION search_index_reset() RETURNS trigger
            LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'stranger'; RETURN NULL; END $$"""],
        archive=archive, run_cli=run_cli, project=project, tmp_path=tmp_path,
        new_database=new_database)
    assert result.returncode == 0, result.stderr
    with connect(target) as conn:
        [(body,)] = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = "
                                 "'search_index_reset'").fetchall()
    assert "stranger" not in body and "log_start" in body


# All or nothing ---------------------------------------------------------------------------------


def test_a_restore_killed_during_its_load_commits_nothing_and_the_next_one_runs(
        archive, project, run_cli, empty_database):
    # The restore's transaction waits on the restore lock, which this test holds; then the
    # `rag restore` process is killed with SIGKILL. Its psql must die with it: were psql left
    # running, it would load and commit the archive as soon as the lock is free.
    holder = connect(empty_database)
    holder.execute("BEGIN")
    holder.execute("SELECT pg_advisory_xact_lock(hashtext('local-rag restore'))")
    process = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "restore", str(archive)],
                               cwd=project, env=cli_env(DATABASE_URL=empty_database),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not holder.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                                 "AND NOT granted").fetchone()[0]:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the restore never reached its load"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        process.kill()
        process.communicate()
    holder.execute("COMMIT")  # the lock is free: a surviving psql would go on now
    deadline = time.monotonic() + 10
    while holder.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                         "current_database() AND pid <> pg_backend_pid()").fetchone()[0]:
        assert time.monotonic() < deadline, "the restore's session outlived it"
        time.sleep(0.05)
    holder.close()
    assert tables_in(empty_database) == 0
    [leftover] = (project / ".local").glob(".restore-*")
    again = restore(run_cli, archive, url=empty_database, cwd=project)
    assert again.returncode == 0, again.stderr
    assert f"removing {leftover}: an interrupted restore of {archive} that committed nothing" in (
        again.stderr)
    assert not list((project / ".local").glob(".restore-*"))
    assert tables_in(empty_database) > 0


def test_a_restore_killed_after_its_commit_is_finished_by_the_next(archive, project, run_cli,
                                                                  empty_database, tmp_path):
    done = restore(run_cli, archive, url=empty_database, cwd=project)
    assert done.returncode == 0, done.stderr
    # What a restore killed between its commit and the move of its uploads leaves: a staging
    # folder holding its mark and the uploads, and the database's mark, unfinished.
    with tarfile.open(archive) as tar:
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        manifest = json.load(handle)
    staging = project / ".local" / ".restore-0123456789abcdef"
    upload = staging / "uploads" / "kb-1" / "memo.txt"
    upload.parent.mkdir(parents=True)
    upload.write_text("kept across the kill")
    (staging / "restore.json").write_text(json.dumps({
        "id": "0123456789abcdef", "archive": str(archive), "manifest": manifest}))
    with connect(empty_database) as conn:
        conn.execute("INSERT INTO restore_runs (id) VALUES ('0123456789abcdef')")
    other = tmp_path / "other.tar"
    other.write_bytes(archive.read_bytes())
    result = restore(run_cli, other, url=empty_database, cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"finished the interrupted restore of {archive}" in result.stdout
    assert f"warning: {other} was not restored" in result.stderr
    assert (project / ".local" / "uploads" / "kb-1" / "memo.txt").read_text() == (
        "kept across the kill")
    assert not staging.exists()
    with connect(empty_database) as conn:
        [(finished,)] = conn.execute("SELECT finished_at IS NOT NULL FROM restore_runs "
                                     "WHERE id = '0123456789abcdef'").fetchall()
    assert finished


def test_restore_creates_pgvector_where_the_role_may(archive, project, run_cli, new_database):
    bare = new_database(vector=False, superuser=True)
    result = restore(run_cli, archive, url=bare, cwd=project)
    assert result.returncode == 0, result.stderr
    with connect(bare) as conn:
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'"
                            ).fetchone()[0] == 1
