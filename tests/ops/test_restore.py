"""`rag restore` refuses what it cannot restore faithfully, and a refused or failed restore
leaves the target database and upload folder as they were: empty."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from core.config import get_config
from core.dburl import database_name, database_settings
from tests.conftest import cli_env


def tables_in(url: str) -> int:
    settings = database_settings(url)
    with psycopg.connect(host=settings["HOST"], user=settings["USER"],
                         password=settings["PASSWORD"], dbname=settings["NAME"]) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                           ).fetchone()
    assert row is not None
    return row[0]


def rewritten(source: Path, target: Path, *, manifest: Callable[[dict], None] | None = None,
              members: dict[str, bytes] | None = None) -> Path:
    """A copy of the archive `source` with its manifest changed in place by `manifest` and the
    named members' contents replaced."""
    with tarfile.open(source) as old, tarfile.open(target, "w") as new:
        for info in old.getmembers():
            handle = old.extractfile(info)
            assert handle is not None
            data = handle.read()
            if info.name == "manifest.json" and manifest is not None:
                content = json.loads(data)
                manifest(content)
                data = json.dumps(content).encode()
            data = (members or {}).get(info.name, data)
            info.size = len(data)
            new.addfile(info, io.BytesIO(data))
    return target


def restore(run_cli, path: Path, *, url: str, cwd: Path, flags: tuple[str, ...] = ()):
    return run_cli("restore", str(path), *flags, env=cli_env(DATABASE_URL=url), cwd=cwd)


def test_a_file_that_is_not_a_backup_is_refused(run_cli, project, tmp_path):
    plain = tmp_path / "notes.tar"
    plain.write_bytes(b"not a tar file at all")
    result = restore(run_cli, plain, url=get_config().test_database_url, cwd=project)
    assert result.returncode == 2
    assert "error [archive_invalid]" in result.stderr and "not a local-rag backup" in result.stderr

    without_manifest = tmp_path / "other.tar"
    with tarfile.open(without_manifest, "w") as tar:
        tar.addfile(tarfile.TarInfo("README"), io.BytesIO(b""))
    result = restore(run_cli, without_manifest, url=get_config().test_database_url, cwd=project)
    assert result.returncode == 2 and "it has no manifest.json" in result.stderr


def test_an_archive_of_too_many_members_is_refused_before_they_are_all_read(tmp_path):
    from ops.restore import ArchiveInvalid, archive_members

    path = tmp_path / "many.tar"
    with tarfile.open(path, "w") as tar:
        for number in range(50):
            tar.addfile(tarfile.TarInfo(f"uploads/kb-1/{number}.txt"), io.BytesIO(b""))
    with tarfile.open(path) as tar:
        assert len(archive_members(tar, path=path, limit=50)) == 50
    with tarfile.open(path) as tar, pytest.raises(ArchiveInvalid, match="more than 10 members"):
        archive_members(tar, path=path, limit=10)


def test_an_archive_of_a_newer_schema_is_refused_before_anything_is_written(
        archive, run_cli, project, tmp_path, empty_database):
    newer = rewritten(archive, tmp_path / "newer.tar", manifest=lambda content: content[
        "schema"]["migrations"].setdefault("knowledge", []).append("0099_from_the_future"))
    result = restore(run_cli, newer, url=empty_database, cwd=project)
    assert result.returncode == 2, result.stdout
    assert "error [restore_refused]: the archive's schema is newer" in result.stderr
    assert "knowledge.0099_from_the_future" in result.stderr
    assert tables_in(empty_database) == 0
    assert not (project / ".local" / "uploads").exists()


def archived_chunks(archive: Path) -> int:
    """How many chunks the archive's manifest says it holds (the sample vault's, as chunked)."""
    with tarfile.open(archive) as tar:
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        return int(json.load(handle)["counts"]["chunks"])


def test_vectors_of_another_embedder_are_refused_unless_asked(archive, run_cli, project,
                                                              tmp_path, empty_database):
    def other_model(content: dict) -> None:
        content["embedder"]["stored"][0]["model"] = "bge-m3"

    other = rewritten(archive, tmp_path / "other.tar", manifest=other_model)
    refused = restore(run_cli, other, url=empty_database, cwd=project)
    assert refused.returncode == 2
    vectors = archived_chunks(archive)
    assert f"the archive's vectors were made by fake / bge-m3 / 1024 ({vectors} vectors)" in (
        refused.stderr)
    assert "EMBEDDING_MODEL=bge-m3" in refused.stderr and "--embedder-change" in refused.stderr
    assert tables_in(empty_database) == 0
    accepted = restore(run_cli, other, url=empty_database, cwd=project,
                       flags=("--embedder-change",))
    assert accepted.returncode == 0, accepted.stderr
    assert tables_in(empty_database) > 0


def test_a_damaged_dump_is_refused_and_nothing_is_written(archive, run_cli, project, tmp_path,
                                                          empty_database):
    with tarfile.open(archive) as tar:
        handle = tar.extractfile("database.pgdump")
        assert handle is not None
        dump = bytearray(handle.read())
    dump[len(dump) // 2] ^= 0xFF
    damaged = rewritten(archive, tmp_path / "damaged.tar", members={"database.pgdump": bytes(dump)})
    result = restore(run_cli, damaged, url=empty_database, cwd=project)
    assert result.returncode == 2
    assert "database.pgdump does not match its checksum" in result.stderr
    assert tables_in(empty_database) == 0


def test_member_names_that_leave_the_upload_folder_are_refused(archive, run_cli, project,
                                                               tmp_path, empty_database):
    def escape(content: dict) -> None:
        content["uploads"]["files"].append({"member": "uploads/kb-1/../../../evil.sh",
                                            "bytes": 1, "sha256": "0" * 64})

    hostile = rewritten(archive, tmp_path / "hostile.tar", manifest=escape)
    result = restore(run_cli, hostile, url=empty_database, cwd=project)
    assert result.returncode == 2
    assert "error [archive_invalid]" in result.stderr and "'..' is not a plain" in result.stderr
    assert tables_in(empty_database) == 0
    assert not list(tmp_path.parent.rglob("evil.sh"))


def test_a_restore_that_fails_its_own_check_is_rolled_back(archive, run_cli, project, tmp_path,
                                                           empty_database):
    def one_chunk_more(content: dict) -> None:
        content["counts"]["chunks"] += 1

    wrong = rewritten(archive, tmp_path / "wrong.tar", manifest=one_chunk_more)
    result = restore(run_cli, wrong, url=empty_database, cwd=project)
    assert result.returncode != 0
    chunks = archived_chunks(archive)
    assert "rolled back" in result.stderr
    assert f"table chunks holds {chunks} rows, the archive {chunks + 1}" in result.stderr
    assert tables_in(empty_database) == 0
    assert not (project / ".local" / "uploads").exists()
    assert not list((project / ".local").glob(".restore-*"))


def test_a_database_or_upload_folder_in_use_is_refused(archive, run_cli, project,
                                                       empty_database):
    in_use = restore(run_cli, archive, url=get_config().test_database_url, cwd=project)
    assert in_use.returncode == 2
    name = database_name(get_config().test_database_url)
    assert f"error [restore_refused]: database {name} is not empty" in in_use.stderr

    kept = project / ".local" / "uploads" / "kb-2" / "report.pdf"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"%PDF-1.7 someone's upload")
    result = restore(run_cli, archive, url=empty_database, cwd=project)
    assert result.returncode == 2
    assert f"the upload folder {project / '.local' / 'uploads'} already holds files" in (
        result.stderr)
    assert kept.read_bytes() == b"%PDF-1.7 someone's upload"
    assert tables_in(empty_database) == 0
