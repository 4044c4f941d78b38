"""Watch mode: a vault folder's changes, seen through inotify (watchfiles), become one sync per
burst of changes, within a few seconds of a save.

One `FolderWatch` per folder, on a thread of its own. Changes are gathered into a burst until the
folder has been quiet for QUIET_SECONDS (an editor's atomic save is a temporary file written and
renamed: several events, one sync), or until the burst has lasted LONGEST_BURST_SECONDS (a file
rewritten in a loop never goes quiet). A sync then re-reads just the changed files (the ingest's
`only`), or the whole folder when a folder itself was added, moved or deleted; the ingest skips
whatever is unchanged, and a rename is a delete and an add. What a sync does — ingest at once
(`rag watch`) or through a background job (`rag serve` with RAG_WATCH) — is the caller's
`sync` (watching/sync.py).

A folder that disappears deletes nothing: its watch is dropped with a warning and the folder is
looked for every second; when it is back (or replaced by another folder of the same name, e.g. a
disk mounted again) it is watched again and synchronised whole, which also catches whatever
changed while it was not watched.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass, field

import watchfiles
from django.db import connection

from core.errors import LocalRagError
from parsing.formats import SUFFIXES
from parsing.sidecar import SIDECAR_SUFFIX, is_sidecar

QUIET_SECONDS = 1.0
LONGEST_BURST_SECONDS = 10.0
# Bounds how often a burst can trigger a sync: the next one waits at least this long after the
# last ended, and at least as long as the last took, so a tool rewriting a file in a loop keeps
# the ingest busy half the time at most.
MIN_GAP_SECONDS = 1.0
ERROR_PAUSE_SECONDS = 5.0  # after a sync failed (the database went away), before trying again
# How often the watch looks at the folder itself (gone? replaced?) while no change comes.
LOOK_SECONDS = 0.5
# More changed files than this in one burst: the whole folder is read (the scan walks it anyway).
ONLY_LIMIT = 1000


@dataclass(frozen=True)
class WatchFolder:
    path: str  # canonical, as the index keeps it (documents.vault_path)
    knowledge_base: str  # the slug shown in the log lines


@dataclass(frozen=True)
class SyncReport:
    """What one sync did: counts of the ingest, or why it refused to run (nothing deleted)."""

    added: int = 0
    updated: int = 0
    deleted: int = 0
    checked: int = 0  # files the sync looked at
    seconds: float = 0.0
    refused: str | None = None

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.deleted

    def as_dict(self) -> dict[str, object]:
        return {"added": self.added, "updated": self.updated, "deleted": self.deleted,
                "checked": self.checked, "seconds": self.seconds, "refused": self.refused}


# Synchronise the folder: just these relative paths, or all of it (None).
Sync = Callable[[WatchFolder, "frozenset[str] | None"], SyncReport]
Say = Callable[[str], None]


class WatchStopped(Exception):
    """Raised at an ingest's safe point once the watch is stopping: nothing half-written."""


class SyncFailed(Exception):
    """A sync that did not run to its end (its job failed); the watch tries it again."""


@dataclass
class Burst:
    """The changes seen since the last sync, and whether it is time for the next one."""

    quiet: float = QUIET_SECONDS
    longest: float = LONGEST_BURST_SECONDS
    paths: set[str] = field(default_factory=set)
    whole: bool = False  # a folder changed: sync the whole folder
    first: float | None = None
    last: float | None = None

    def add(self, *, paths: Iterable[str], whole: bool, now: float) -> None:
        paths = set(paths)
        if not paths and not whole:
            return
        self.paths |= paths
        self.whole = self.whole or whole
        self.first = now if self.first is None else self.first
        self.last = now

    def due(self, *, now: float, not_before: float) -> bool:
        """True once the burst is over (quiet, or too long) and the rate bound allows a sync."""
        if self.first is None or self.last is None or now < not_before:
            return False
        return now - self.last >= self.quiet or now - self.first >= self.longest

    def take(self) -> frozenset[str] | None:
        """The paths to sync (None: the whole folder), the burst emptied."""
        only = None if self.whole or len(self.paths) > ONLY_LIMIT else frozenset(self.paths)
        self.paths, self.whole, self.first, self.last = set(), False, None, None
        return only


def changes_classify(changes: Iterable[tuple[object, str]], *,
                     root: str) -> tuple[set[str], bool]:
    """(relative paths of notes, documents and sidecars' documents that changed, whether a
    folder changed). Hidden files and folders (.obsidian, .trash, an editor's temporary files)
    and files the ingest does not read are left out."""
    paths: set[str] = set()
    whole = False
    for _, path in changes:
        relative = os.path.relpath(path, root)
        if relative == ".":
            whole = True  # the folder itself: the watch looks at it next
            continue
        parts = relative.split(os.sep)
        if parts[0] == ".." or any(part.startswith(".") for part in parts):
            continue
        name = parts[-1]
        if is_sidecar(name):
            paths.add("/".join(parts)[:-len(SIDECAR_SUFFIX)])  # its document, read again
        elif name.lower().endswith(SUFFIXES):
            paths.add("/".join(parts))
        elif not os.path.isfile(path):
            whole = True  # a folder added, moved or deleted (or a file of no kind, gone)
    return paths, whole


def _visible(change: object, path: str, *, root: str) -> bool:
    """watchfiles' filter: events inside hidden folders (.obsidian's churn) never surface."""
    relative = os.path.relpath(path, root)
    return not any(part.startswith(".") for part in relative.split(os.sep) if part != ".")


def _identity(path: str) -> tuple[int, int] | None:
    """The folder's (device, inode), or None when it is not there (or not a folder)."""
    try:
        facts = os.stat(path)
    except OSError:
        return None
    return (facts.st_dev, facts.st_ino) if stat.S_ISDIR(facts.st_mode) else None


class FolderWatch:
    """Watches one folder and syncs it after each burst of changes, until `stop` is set."""

    def __init__(self, folder: WatchFolder, *, sync: Sync, stop: threading.Event, say: Say,
                 warn: Say) -> None:
        self.folder = folder
        self._sync = sync
        self._stop = stop
        self._say = say
        self._warn = warn
        self._not_before = 0.0

    def run(self) -> None:
        """Sync the folder whole, then each burst of changes; resume after it comes back."""
        while not self._stop.is_set():
            identity = self._folder_wait()
            if identity is None:
                return
            self._say(f"watching {self.folder.path} (kb {self.folder.knowledge_base})")
            try:
                self._watch(identity)
            except OSError as exc:  # gone as the watch began, or out of inotify watches
                if _identity(self.folder.path) is not None:
                    self._warn(f"{self.folder.path}: cannot watch it ({exc}); trying again in "
                               f"{ERROR_PAUSE_SECONDS:.0f} s")
                    self._stop.wait(ERROR_PAUSE_SECONDS)

    def _watch(self, identity: tuple[int, int]) -> None:
        root = self.folder.path
        burst = Burst()
        changes = watchfiles.watch(
            root, watch_filter=lambda change, path: _visible(change, path, root=root),
            debounce=int(LOOK_SECONDS * 1000), step=50, rust_timeout=int(LOOK_SECONDS * 1000),
            yield_on_timeout=True, stop_event=self._stop, raise_interrupt=False,
            ignore_permission_denied=True)
        with closing(changes):
            for position, batch in enumerate(changes):
                if self._stop.is_set():
                    return
                if position == 0:
                    # The watch is in place once it yields first: a whole sync now catches what
                    # changed while nobody watched, and nothing saved meanwhile goes unseen.
                    self._run_sync(None, burst, catch_up=True)
                    continue
                now = time.monotonic()
                if _identity(root) != identity:
                    # Gone, or another folder in its place: this watch sees neither any more.
                    return
                paths, whole = changes_classify(batch, root=root)
                burst.add(paths=paths, whole=whole, now=now)
                if burst.due(now=now, not_before=self._not_before):
                    self._run_sync(burst.take(), burst)

    def _folder_wait(self) -> tuple[int, int] | None:
        """The folder's identity once it is there; None when stopped first."""
        identity = _identity(self.folder.path)
        if identity is not None:
            return identity
        self._warn(f"{self.folder.path} is gone; nothing is deleted from the index. "
                   "Watching for it to come back")
        while not self._stop.wait(1.0):
            identity = _identity(self.folder.path)
            if identity is not None:
                self._say(f"{self.folder.path} is back")
                return identity
        return None

    def _run_sync(self, only: frozenset[str] | None, burst: Burst, *,
                  catch_up: bool = False) -> None:
        try:
            report = self._sync(self.folder, only)
        except WatchStopped:
            return
        except Exception as exc:  # the watch outlives any failure of a sync, as a worker does
            reason = (exc.message if isinstance(exc, LocalRagError) else str(exc)
                      if isinstance(exc, SyncFailed) else f"{type(exc).__name__}: {exc}")
            connection.close()  # a broken connection is replaced on the next query
            self._warn(f"{self.folder.path}: the sync failed ({reason}); trying "
                       f"again in {ERROR_PAUSE_SECONDS:.0f} s")
            burst.add(paths=only or (), whole=only is None, now=time.monotonic())
            self._not_before = time.monotonic() + ERROR_PAUSE_SECONDS
            return
        # The ingest's own time, not the wait for a worker; the catch-up at the start of a watch
        # reads a whole folder once and is no loop to slow down.
        took = 0.0 if catch_up else report.seconds
        self._not_before = time.monotonic() + max(MIN_GAP_SECONDS, took)
        if report.refused:
            self._warn(f"{self.folder.path}: {report.refused}")
        elif report.changed:
            files = "file" if report.changed == 1 else "files"
            self._say(f"re-indexed {report.changed} {files} in {report.seconds:.1f} s "
                      f"({report.added} added, {report.updated} updated, {report.deleted} "
                      f"deleted) in {self.folder.path}")
        elif only is None:
            self._say(f"{self.folder.path}: up to date ({report.checked} files checked in "
                      f"{report.seconds:.1f} s)")


def folders_watch(folders: list[WatchFolder], *, sync: Sync, stop: threading.Event, say: Say,
                  warn: Say) -> None:
    """Watch every folder on a thread of its own until `stop` is set; returns once all ended."""
    def run(folder: WatchFolder) -> None:
        try:
            FolderWatch(folder, sync=sync, stop=stop, say=say, warn=warn).run()
        finally:
            connection.close()  # Django's connections are per thread: this one ends with it

    threads = [threading.Thread(target=run, args=(folder,), name=f"watch-{index + 1}",
                                daemon=True)
               for index, folder in enumerate(folders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        # A bounded join keeps the calling thread responsive to signals (SIGTERM, Ctrl-C).
        while thread.is_alive():
            thread.join(timeout=0.5)
