"""LLM slots: at most LLM_MAX_CONCURRENCY model calls at once per server, and never a frozen one.

gunicorn runs several worker processes, so the limit lives in the file system: slot files
`slot-0 … slot-<N-1>` under the project's `.local/llm-slots/`, each held by an exclusive,
non-blocking `flock` on one open file. The kernel drops the lock when its holder closes the file
or dies, so a killed worker never leaks a slot; a request polls until its wait
(LLM_QUEUE_WAIT_SECONDS) ends, then gets 503 `llm_busy` with Retry-After.

A waiting request occupies a server thread as surely as a running one, so inside one process at
most LLM_MAX_CONCURRENCY threads are ever busy with the LLM, waiting included; any more are
turned away at once. The other threads stay free for /health and /search — keep
LLM_MAX_CONCURRENCY below `rag serve --threads` (8 by default).

The fake provider takes no slot: it has no upstream to protect and answers in microseconds, and
taking one would only couple unrelated processes (test runs, CLI calls) through the slot files.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import math
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from answering.llm import IN_PROCESS_PROVIDERS
from core.config import Config
from core.errors import LocalRagError

logger = logging.getLogger("localrag.llm")

SLOT_POLL_SECONDS = 0.05

# Per-process seats, one semaphore per limit (tests change the limit between calls).
_seats: dict[int, threading.BoundedSemaphore] = {}
_seats_lock = threading.Lock()


class LLMBusy(LocalRagError):
    code = "llm_busy"


class LLMSlot:
    """A held slot: a locked slot file and a seat in this process, until `release()`."""

    def __init__(self, *, fd: int, seat: threading.BoundedSemaphore, path: Path) -> None:
        self.path = path
        self._fd: int | None = fd
        self._seat = seat

    def release(self) -> None:
        """Give the slot back; safe to call more than once."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # Closing the only descriptor of the open file drops its flock.
        os.close(fd)
        self._seat.release()


def llm_slot_dir(*, config: Config) -> Path:
    """Where the slot files live: shared by every process serving this project."""
    if config.project_root is not None:
        directory = config.project_root / ".local" / "llm-slots"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            return directory
        except OSError as exc:
            logger.warning("cannot create %s (%s); using a private temporary directory",
                           directory, exc)
    return _private_dir()


def llm_slot_acquire(*, config: Config) -> LLMSlot | None:
    """Take an LLM slot, waiting up to LLM_QUEUE_WAIT_SECONDS; None for providers that need
    none. Raises LLMBusy when none comes free in time."""
    if config.llm_provider in IN_PROCESS_PROVIDERS:  # they wait on no server
        return None
    limit = config.llm_max_concurrency
    seat = _seat(limit)
    if not seat.acquire(blocking=False):
        raise _busy(config, reason="threads")
    try:
        slot = _slot_wait(directory=llm_slot_dir(config=config), limit=limit, seat=seat,
                          wait_seconds=config.llm_queue_wait_seconds)
    except BaseException:
        seat.release()
        raise
    if slot is None:
        seat.release()
        raise _busy(config, reason="slots")
    return slot


@contextmanager
def llm_slot(*, config: Config) -> Iterator[LLMSlot | None]:
    """`llm_slot_acquire` as a block: the slot is released when the block ends."""
    slot = llm_slot_acquire(config=config)
    try:
        yield slot
    finally:
        if slot is not None:
            slot.release()


def _seat(limit: int) -> threading.BoundedSemaphore:
    with _seats_lock:
        if limit not in _seats:
            _seats[limit] = threading.BoundedSemaphore(limit)
        return _seats[limit]


def _slot_wait(*, directory: Path, limit: int, seat: threading.BoundedSemaphore,
               wait_seconds: float) -> LLMSlot | None:
    paths = [directory / f"slot-{index}" for index in range(limit)]
    give_up_at = time.monotonic() + wait_seconds
    while True:
        for path in paths:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            return LLMSlot(fd=fd, seat=seat, path=path)
        left = give_up_at - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(SLOT_POLL_SECONDS, left))


def _busy(config: Config, *, reason: str) -> LLMBusy:
    retry_after = max(1, math.ceil(config.llm_queue_wait_seconds))
    logger.warning("LLM busy (%s): all %s slots in use; answering llm_busy", reason,
                   config.llm_max_concurrency)
    return LLMBusy(f"the LLM is busy with {config.llm_max_concurrency} other requests; "
                   f"retry in {retry_after}s",
                   details={"max_concurrency": config.llm_max_concurrency},
                   headers={"Retry-After": str(retry_after)})


@functools.cache
def _private_dir() -> Path:
    """A per-user directory under the temp dir, refused if someone else planted it."""
    directory = Path(tempfile.gettempdir()) / f"localrag-llm-slots-{os.getuid()}"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        pass
    info = os.lstat(directory) if os.path.lexists(directory) else None
    if (info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & 0o077):
        return directory
    # Someone else's directory (or a link) in a shared /tmp: slot files there could be held
    # by them. A fresh private one keeps the limit per process rather than per server.
    logger.warning("%s is not a private directory; LLM slots are per process", directory)
    return Path(tempfile.mkdtemp(prefix="localrag-llm-slots-"))
