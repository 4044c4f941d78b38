"""Watch mode's bursts, the changes it keeps and one folder's watch with a fake sync
(watching/folders.py), without a database. The watch against a real `rag serve` and `rag watch`
is tested in tests/commands/test_watch.py."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from core.config import get_config
from watching import sync as watch_sync
from watching.folders import (
    LONGEST_BURST_SECONDS,
    ONLY_LIMIT,
    QUIET_SECONDS,
    Burst,
    FolderWatch,
    SyncReport,
    WatchFolder,
    changes_classify,
)
from watching.sync import SyncNow


def test_a_burst_is_due_once_the_folder_is_quiet():
    burst = Burst()
    burst.add(paths={"a.md"}, whole=False, now=10.0)
    burst.add(paths={"b.md"}, whole=False, now=10.5)
    assert not burst.due(now=10.5 + QUIET_SECONDS / 2, not_before=0)
    assert burst.due(now=10.5 + QUIET_SECONDS, not_before=0)
    assert burst.take() == frozenset({"a.md", "b.md"})
    assert not burst.due(now=100.0, not_before=0)  # emptied


def test_a_burst_that_never_goes_quiet_is_due_after_the_longest_burst():
    burst = Burst()
    moment = 0.0
    while moment < LONGEST_BURST_SECONDS:
        burst.add(paths={"looping.md"}, whole=False, now=moment)
        assert not burst.due(now=moment, not_before=0)
        moment += QUIET_SECONDS / 4
    burst.add(paths={"looping.md"}, whole=False, now=moment)
    assert burst.due(now=moment, not_before=0)


def test_the_rate_bound_holds_a_due_burst_back():
    burst = Burst()
    burst.add(paths={"a.md"}, whole=False, now=0.0)
    assert not burst.due(now=5.0, not_before=6.0)
    assert burst.due(now=6.0, not_before=6.0)


def test_a_folder_change_or_a_huge_burst_syncs_the_whole_folder():
    burst = Burst()
    burst.add(paths={"a.md"}, whole=True, now=0.0)
    assert burst.take() is None
    burst.add(paths={f"{index}.md" for index in range(ONLY_LIMIT + 1)}, whole=False, now=0.0)
    assert burst.take() is None


def test_nothing_kept_is_no_burst():
    burst = Burst()
    burst.add(paths=set(), whole=False, now=0.0)
    assert not burst.due(now=100.0, not_before=0)


def test_changes_keep_notes_documents_and_sidecars_and_leave_hidden_files_out(tmp_path: Path):
    root = str(tmp_path)
    (tmp_path / "Projects").mkdir()
    (tmp_path / "photo.png").write_bytes(b"png")
    changes = [("added", f"{root}/Projects/Plan.md"), ("modified", f"{root}/report.PDF"),
               ("modified", f"{root}/scan.pdf.meta.yaml"),
               ("modified", f"{root}/.obsidian/workspace.json"),
               ("added", f"{root}/.trash/old.md"), ("added", f"{root}/.Plan.md.tmp"),
               ("deleted", f"{root}/.Plan.md.tmp"), ("modified", f"{root}/photo.png")]
    assert changes_classify(changes, root=root) == (
        {"Projects/Plan.md", "report.PDF", "scan.pdf"}, False)


def test_a_folder_added_or_gone_asks_for_the_whole_folder(tmp_path: Path):
    root = str(tmp_path)
    (tmp_path / "Archive").mkdir()
    assert changes_classify([("added", f"{root}/Archive")], root=root) == (set(), True)
    assert changes_classify([("deleted", f"{root}/Projects")], root=root) == (set(), True)
    assert changes_classify([("deleted", root)], root=root) == (set(), True)


def test_a_file_rewritten_in_a_loop_is_one_sync_once_it_stops(tmp_path: Path):
    syncs: list[frozenset[str] | None] = []
    stop = threading.Event()
    folder = WatchFolder(path=str(tmp_path.resolve()), knowledge_base="default")

    def sync(watched: WatchFolder, only: frozenset[str] | None) -> SyncReport:
        syncs.append(only)
        return SyncReport(updated=1 if only else 0)

    thread = threading.Thread(target=FolderWatch(folder, sync=sync, stop=stop, say=print,
                                                 warn=print).run, daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: syncs == [None]), "no catch-up sync at the start"
        ends = time.monotonic() + 2.0
        while time.monotonic() < ends:  # never quiet for QUIET_SECONDS
            (tmp_path / "loop.md").write_text(f"# Loop\n\n{time.monotonic()}\n")
            (tmp_path / ".obsidian").mkdir(exist_ok=True)
            (tmp_path / ".obsidian" / "workspace.json").write_text("{}")
            time.sleep(0.1)
        assert syncs == [None]
        assert wait_for(lambda: len(syncs) == 2)
        assert syncs[1] == frozenset({"loop.md"})
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_an_ingest_of_rag_watch_is_under_way_only_while_it_runs(monkeypatch):
    entered, release = threading.Event(), threading.Event()

    def held_sync(*arguments, **keywords) -> SyncReport:
        entered.set()
        release.wait(10)
        return SyncReport()

    monkeypatch.setattr(watch_sync, "folder_sync", held_sync)
    sync = SyncNow(config=get_config(), stop=threading.Event())
    folder = WatchFolder(path="/vault", knowledge_base="default")
    thread = threading.Thread(target=sync, args=(folder, None), daemon=True)
    assert not sync.under_way
    thread.start()
    assert entered.wait(10)
    assert sync.under_way
    release.set()
    thread.join(timeout=10)
    assert not sync.under_way


def wait_for(condition, *, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
