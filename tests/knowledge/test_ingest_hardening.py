"""One note can never stop an ingest, and a scan error never deletes: the hardening cases,
each seen on the code before it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from core.config import get_config
from knowledge.ingest import IngestRequest, VaultEmpty, vault_ingest
from knowledge.vault_index import VaultOverlap, vault_forget, vaults_list
from parsing import vault as vault_module
from tests.conftest import cli_env
from tests.harness import ROOT

pytestmark = pytest.mark.django_db


def rows(query: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def ingest(root: Path, **kwargs):
    return vault_ingest(IngestRequest(vault_path=root, prepare_workers=0, **kwargs),
                        config=get_config())


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "good.md", "# Good\n\nA good note about Atlas.\n")
    write(root, "sub/inner.md", "# Inner\n\nInside a folder.\n")
    write(root, "gone.md", "# Gone\n\nDeleted before the second run.\n")
    ingest(root)
    (root / "gone.md").unlink()
    return root


def paths() -> list[str]:
    return [row[0] for row in rows("SELECT relative_path FROM documents ORDER BY 1")]


def test_file_name_that_is_not_utf8_is_a_warning_and_the_rest_is_indexed(vault: Path):
    with open(os.fsencode(vault) + b"/bad\xff name.md", "wb") as handle:
        handle.write(b"# Bad name\n\nBody.\n")
    result = ingest(vault)
    assert result.status == "success" and result.documents_deleted == 1
    assert paths() == ["good.md", "sub/inner.md"]
    assert {"file": "bad\\xff name.md",
            "reason": "file name is not valid UTF-8; not indexed"} in result.warnings
    stored = rows("SELECT metadata->'warnings' FROM ingest_runs ORDER BY id DESC LIMIT 1")[0][0]
    assert any(warning["file"] == "bad\\xff name.md" for warning in json.loads(stored))


def test_integer_too_long_for_json_skips_only_that_note(vault: Path):
    write(vault, "huge.md", "---\nx: 0x" + "f" * 4000 + "\n---\n# Huge\n\nBody.\n")
    write(vault, "fine.md", "# Fine\n\nStill indexed.\n")
    result = ingest(vault)
    assert result.status == "success" and result.documents_deleted == 1
    assert "fine.md" in paths()
    assert "huge.md" not in paths()
    huge = [w["reason"] for w in result.warnings if w["file"] == "huge.md"]
    assert len(huge) == 1 and huge[0].startswith("could not be stored")


def test_path_too_long_for_the_index_is_a_warning(vault: Path):
    deep = "/".join(["d" * 200] * 12) + "/note.md"
    write(vault, deep, "# Deep\n\nToo deep to index.\n")
    result = ingest(vault)
    assert result.status == "success" and result.documents_deleted == 1
    assert paths() == ["good.md", "sub/inner.md"]
    assert any(w["file"] == deep and "byte limit of the index" in w["reason"]
               for w in result.warnings)


def test_unreadable_folder_is_a_warning_and_nothing_under_it_is_deleted(vault, monkeypatch):
    real_scandir = os.scandir

    def refuse(path=".", *args):
        if Path(os.fsdecode(path)) == vault / "sub":
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_scandir(path, *args)

    # The kernel's answer for a folder the process may not list (root is never refused one).
    monkeypatch.setattr(os, "scandir", refuse)
    result = ingest(vault)
    assert result.status == "success"
    assert result.documents_deleted == 1  # gone.md only
    assert paths() == ["good.md", "sub/inner.md"]
    assert {"file": "sub", "reason": "cannot read folder: Permission denied"} in result.warnings


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the scan as another user")
def test_scan_as_a_user_who_cannot_list_a_folder_reports_it(tmp_path: Path):
    readable = subprocess.run(["runuser", "-u", "nobody", "--", "test", "-r",
                               str(ROOT / "parsing" / "vault.py")], capture_output=True)
    if readable.returncode != 0:
        pytest.skip(f"the checkout ({ROOT}) is in a folder 'nobody' cannot enter")
    root = Path("/tmp") / f"lr-scan-{os.getpid()}"
    try:
        write(root, "open.md", "# Open\n")
        write(root, "closed/secret.md", "# Secret\n")
        root.chmod(0o755)
        (root / "closed").chmod(0o700)
        probe = ("import json, sys; from pathlib import Path; "
                 "from parsing.vault import vault_scan; s = vault_scan(root=Path(sys.argv[1])); "
                 "print(json.dumps([[n.relative_path for n in s.notes], s.warnings, "
                 "s.unreadable]))")
        # The scan needs only the standard library; the venv's interpreter may sit in /root.
        python = shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable
        result = subprocess.run(["runuser", "-u", "nobody", "--", python, "-c", probe,
                                 str(root)], cwd=ROOT, capture_output=True, text=True,
                                timeout=60, env={"PATH": os.environ["PATH"],
                                                 "PYTHONPATH": str(ROOT)})
        assert result.returncode == 0, result.stderr
        notes, warnings, unreadable = json.loads(result.stdout)
        assert notes == ["open.md"] and unreadable == ["closed"]
        assert warnings == [["closed", "cannot read folder: Permission denied"]]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_scan_that_finds_nothing_deletes_nothing_unless_pruned(vault: Path):
    for note in vault.rglob("*.md"):
        note.unlink()
    with pytest.raises(VaultEmpty) as refused:
        ingest(vault)
    assert refused.value.exit_code == 2 and "--prune" in refused.value.message
    assert paths() == ["gone.md", "good.md", "sub/inner.md"]
    assert ingest(vault, prune=True).documents_deleted == 3
    assert paths() == []


def test_file_replaced_after_the_scan_is_not_read(tmp_path: Path):
    root = tmp_path / "v"
    write(root, "a.md", "# A\n")
    secret = write(tmp_path, "secret.md", "# Secret outside the vault\n")
    note = vault_module.vault_scan(root=root).notes[0]
    # Kept, so its inode cannot be reused by the files created below.
    (root / "a.md").rename(tmp_path / "original.md")
    (root / "a.md").symlink_to(secret)
    with pytest.raises(vault_module.NoteRejected, match="symbolic links"):
        vault_module.note_read(note=note, root=root)
    (root / "a.md").unlink()
    os.link(secret, root / "a.md")  # a hard link: the path is inside, the file is not
    with pytest.raises(vault_module.NoteRejected, match="replaced since the scan"):
        vault_module.note_read(note=note, root=root)


def test_file_that_grew_past_the_limit_after_the_scan_is_skipped(tmp_path: Path):
    root = tmp_path / "v"
    write(root, "a.md", "# A\n")
    note = vault_module.vault_scan(root=root).notes[0]
    with open(root / "a.md", "a", encoding="utf-8") as handle:
        handle.write("x" * 2000)
    with pytest.raises(vault_module.NoteRejected, match="larger than the 1,000-byte limit"):
        vault_module.note_read(note=note, root=root, max_bytes=1000)
    assert vault_module.note_read(note=note, root=root, max_bytes=5000).size_bytes == 2004


def test_hidden_files_and_links_into_hidden_folders_are_not_indexed(tmp_path: Path):
    root = tmp_path / "v"
    write(root, "visible.md", "# Visible\n")
    write(root, ".hidden.md", "# Hidden file\n")
    write(root, ".trash/old.md", "# Trashed\n")
    (root / "link.md").symlink_to(root / ".trash" / "old.md")
    scan = vault_module.vault_scan(root=root)
    assert [note.relative_path for note in scan.notes] == ["visible.md"]
    assert ("link.md", "symlink points into a hidden folder; not indexed") in scan.warnings


def test_vault_inside_or_around_an_indexed_vault_is_refused(vault: Path):
    with pytest.raises(VaultOverlap) as inside:
        ingest(vault / "sub")
    assert inside.value.exit_code == 2 and str(vault) in inside.value.message
    with pytest.raises(VaultOverlap, match="around the indexed vault"):
        ingest(vault.parent)


def test_vault_list_and_forget(vault: Path, tmp_path: Path):
    other = tmp_path / "other"
    write(other, "x.md", "# X\n\nOther vault.\n")
    ingest(other)
    listed = {v.vault_path: (v.documents, v.last_run_status) for v in vaults_list()}
    assert listed == {str(vault): (3, "success"), str(other): (1, "success")}
    forgotten, removed = vault_forget(vault_path=vault)
    assert (forgotten, removed) == (str(vault), 3)
    assert rows("SELECT DISTINCT vault_path FROM documents") == [(str(other),)]
    assert rows("SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.vault_path = %s", [str(vault)]) == [(0,)]
    assert rows("SELECT count(*) FROM embeddings")[0][0] == rows(
        "SELECT count(*) FROM chunks")[0][0] > 0


def test_run_left_running_is_marked_interrupted_by_the_next_ingest(vault: Path):
    stale = rows("INSERT INTO ingest_runs (vault_path, embedding_provider, embedding_model, "
                 "embedding_dim, status) VALUES (%s, 'fake', 'fake-lexical-v1', 1024, 'running') "
                 "RETURNING id", [str(vault)])[0][0]
    ingest(vault)
    status, summary = rows("SELECT status, error_summary FROM ingest_runs WHERE id = %s",
                           [stale])[0]
    assert status == "failed" and summary.startswith("interrupted")
    assert rows("SELECT count(*) FROM ingest_runs WHERE status = 'running'") == [(0,)]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_worker_processes_end_when_the_ingest_is_killed(clean_tables, tmp_path: Path):
    root = tmp_path / "big"
    for number in range(3000):
        write(root, f"n{number:05d}.md", f"# Note {number}\n\n" + "Body text. " * 40 + "\n")
    process = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "ingest", str(root)],
                               cwd=ROOT, env=cli_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(workers) < 2 and process.poll() is None:
        workers = [pid for pid in _children(process.pid) if _is_worker(pid)]
        time.sleep(0.05)
    assert workers, "the ingest finished before it started its worker processes"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)
    # The killed run stays `running` until the next ingest of that vault, which marks it.
    assert rows("SELECT status FROM ingest_runs") == [("running",)]
    write(root, "n00000.md", "# Note 0\n\nchanged\n")
    finished = subprocess.run([sys.executable, str(ROOT / "manage.py"), "ingest", str(root)],
                              cwd=ROOT, env=cli_env(), capture_output=True, text=True,
                              timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert rows("SELECT status, left(error_summary, 11) FROM ingest_runs ORDER BY id") == [
        ("failed", "interrupted"), ("success", None)]


def _is_worker(pid: int) -> bool:
    """Whether `pid` is a multiprocessing worker; False for one that has exited meanwhile."""
    try:
        return b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
