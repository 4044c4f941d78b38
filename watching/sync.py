"""What watch mode watches and what a burst of changes does: the folders of `rag watch` and of
`rag serve` (RAG_WATCH), a sync run at once, or one run by the background-jobs worker."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from core.config import Config, get_config
from core.errors import InvalidRequest, LocalRagError
from jobs.queue import job_enqueue, job_get
from jobs.worker import JobContext
from knowledge.bases import DEFAULT_SLUG, kb_get, kb_list
from knowledge.ingest import IngestRequest, IngestResult, VaultEmpty, vault_ingest
from parsing.vault import VaultNotFound, vault_resolve
from watching.folders import Say, SyncFailed, SyncReport, WatchFolder, WatchStopped, folders_watch

JOB_VAULT_SYNC = "vault_sync"
JOB_POLL_SECONDS = 0.2  # how often the watch looks whether its sync job has ended
FOLDERS_RETRY_SECONDS = 5.0  # the database is not there yet when `rag serve` starts


def watch_folders(*, path: str | None, knowledge_base: str | None,
                  config: Config) -> list[WatchFolder]:
    """The folders `rag watch` watches: PATH (default VAULT_PATH), or with only a knowledge base,
    every vault folder of that base."""
    if knowledge_base is not None and path is None:
        base = kb_get(knowledge_base)
        folders = [WatchFolder(path=source.path, knowledge_base=base.slug)
                   for source in base.sources if source.kind == "vault"]
        if not folders:
            raise InvalidRequest(f"the knowledge base {knowledge_base!r} has no vault folder "
                                 f"yet; add one with `rag kb add-source {knowledge_base} PATH`")
        return folders
    root = str(vault_resolve(path or config.vault_path))
    return [WatchFolder(path=root, knowledge_base=knowledge_base or _owner(root))]


def serve_folders(*, config: Config) -> list[WatchFolder]:
    """The folders `rag serve` watches: every vault folder of every knowledge base, or
    VAULT_PATH while there is none."""
    folders = [WatchFolder(path=source.path, knowledge_base=base.slug)
               for base in kb_list() for source in base.sources if source.kind == "vault"]
    return folders or watch_folders(path=None, knowledge_base=None, config=config)


def _owner(path: str) -> str:
    """The slug of the base the folder is a source of; `default`, which a first ingest puts it
    into, for one that is none's yet."""
    for base in kb_list():
        if any(source.path == path for source in base.sources):
            return base.slug
    return DEFAULT_SLUG


def folder_sync(request: IngestRequest, *, config: Config) -> SyncReport:
    """Ingest the changed files of the request's folder (all of it when `only` is None), after
    a run of it under way; a folder gone, or one that looks emptied, is refused with nothing
    deleted."""
    try:
        result = vault_ingest(dataclasses.replace(
            request, wait_for_lock=True,
            # A few files: read here, no process pool to start.
            prepare_workers=0 if request.only is not None else None), config=config)
    except (VaultEmpty, VaultNotFound) as exc:
        return SyncReport(refused=exc.message)
    return _report(result)


def _report(result: IngestResult) -> SyncReport:
    return SyncReport(added=result.documents_added, updated=result.documents_updated,
                      deleted=result.documents_deleted, checked=result.files_seen,
                      seconds=result.elapsed_seconds)


class SyncNow:
    """A sync that ingests in this process (`rag watch`); a stop ends it at its next safe
    point, nothing half-written."""

    def __init__(self, *, config: Config, stop: threading.Event,
                 knowledge_base: str | None = None) -> None:
        self._config = config
        self._stop = stop
        self._knowledge_base = knowledge_base
        self._lock = threading.Lock()
        self._running = 0  # each folder's watch syncs on a thread of its own

    @property
    def under_way(self) -> bool:
        """True while an ingest of any folder runs."""
        return self._running > 0

    def __call__(self, folder: WatchFolder, only: frozenset[str] | None) -> SyncReport:
        with self._lock:
            self._running += 1
        try:
            return folder_sync(IngestRequest(vault_path=folder.path, only=only,
                                             knowledge_base=self._knowledge_base,
                                             checkpoint=self._checkpoint), config=self._config)
        finally:
            with self._lock:
                self._running -= 1

    def _checkpoint(self) -> None:
        if self._stop.is_set():
            raise WatchStopped()


def sync_through_jobs(*, stop: threading.Event) -> Callable[[WatchFolder, frozenset[str] | None],
                                                           SyncReport]:
    """A sync that queues a `vault_sync` job and waits for a jobs worker to run it (`rag serve`):
    it is listed in `rag jobs`, and never runs beside the worker's other ingests."""

    def sync(folder: WatchFolder, only: frozenset[str] | None) -> SyncReport:
        job_id = job_enqueue(type=JOB_VAULT_SYNC, resource=f"vault:{folder.path}",
                             max_attempts=2,
                             payload={"vault_path": folder.path,
                                      "only": sorted(only) if only is not None else None})
        while not stop.wait(JOB_POLL_SECONDS):
            job = job_get(job_id)
            if job.status == "succeeded":
                return SyncReport(**job.result)
            if job.status in ("failed", "cancelled"):
                raise SyncFailed(f"job {job_id} {job.status}: {job.last_error or ''}")
        raise WatchStopped()  # the job stays queued for the next worker

    return sync


def vault_sync_job(context: JobContext) -> dict[str, Any]:
    """The `vault_sync` job: ingest a watched folder's changed files (or all of them)."""
    only = context.payload.get("only")
    report = folder_sync(IngestRequest(vault_path=context.payload["vault_path"],
                                       only=frozenset(only) if only is not None else None,
                                       checkpoint=context.checkpoint), config=get_config())
    return report.as_dict()


class ServeWatcher:
    """`rag serve`'s watch (RAG_WATCH): every vault folder, its syncs run by the jobs worker.
    Log lines go to the `localrag.watch` logger."""

    def __init__(self, *, say: Say, warn: Say) -> None:
        self._stop = threading.Event()
        self._say = say
        self._warn = warn

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        folders = self._folders()
        if folders:
            folders_watch(folders, sync=sync_through_jobs(stop=self._stop), stop=self._stop,
                          say=self._say, warn=self._warn)

    def _folders(self) -> list[WatchFolder]:
        while not self._stop.is_set():
            try:
                return serve_folders(config=get_config())
            except VaultNotFound as exc:
                self._warn(f"nothing to watch: no knowledge base has a vault folder, "
                           f"and {exc.message}")
                return []
            except LocalRagError as exc:
                self._warn(f"watch: {exc.message}; trying again in "
                           f"{FOLDERS_RETRY_SECONDS:.0f} s")
                self._stop.wait(FOLDERS_RETRY_SECONDS)
        return []
