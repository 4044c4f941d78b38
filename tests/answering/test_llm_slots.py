"""LLM slots: a per-server limit held in flock-ed files, a bounded wait, and llm_busy."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from answering.slots import LLMBusy, llm_slot, llm_slot_acquire, llm_slot_dir

# Locks the first N slot files, says so, and holds them until its stdin closes or it is killed.
HOLDER = """
import fcntl, os, sys
directory, count = sys.argv[1], int(sys.argv[2])
os.makedirs(directory, exist_ok=True)
held = []
for index in range(count):
    fd = os.open(os.path.join(directory, f"slot-{index}"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    held.append(fd)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def slot_config(config_override, tmp_path: Path):
    def apply(**changes):
        values = {"llm_provider": "openai-compatible", "llm_base_url": "http://127.0.0.1:9/v1",
                  "llm_model": "m", "llm_api_key": "k", "project_root": tmp_path,
                  "llm_max_concurrency": 2, "llm_queue_wait_seconds": 0.3}
        values.update(changes)
        return config_override(**values)

    return apply


@contextmanager
def held_by_another_process(directory: Path, count: int) -> Iterator[subprocess.Popen]:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory), str(count)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=10)


def lock_is_free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_slots_live_under_the_project_local_directory(slot_config, tmp_path: Path) -> None:
    config = slot_config()
    assert llm_slot_dir(config=config) == tmp_path / ".local" / "llm-slots"
    with llm_slot(config=config) as slot:
        assert slot.path == tmp_path / ".local" / "llm-slots" / "slot-0"
        assert not lock_is_free(slot.path)
    assert lock_is_free(slot.path)


def test_slots_held_by_another_process_make_llm_busy(slot_config) -> None:
    config = slot_config(llm_max_concurrency=2, llm_queue_wait_seconds=0.3)
    with held_by_another_process(llm_slot_dir(config=config), 2):
        started = time.monotonic()
        with pytest.raises(LLMBusy) as caught:
            llm_slot_acquire(config=config)
        waited = time.monotonic() - started
    assert 0.3 <= waited < 1.0
    assert caught.value.code == "llm_busy" and caught.value.http_status == 503
    assert caught.value.headers == {"Retry-After": "1"}


def test_one_free_slot_left_by_another_process_is_taken(slot_config) -> None:
    config = slot_config(llm_max_concurrency=2)
    with held_by_another_process(llm_slot_dir(config=config), 1):
        slot = llm_slot_acquire(config=config)
        assert slot.path.name == "slot-1"
        slot.release()


def test_slot_of_a_killed_holder_comes_free(slot_config) -> None:
    config = slot_config(llm_max_concurrency=1, llm_queue_wait_seconds=2)
    with held_by_another_process(llm_slot_dir(config=config), 1) as holder:
        threading.Timer(0.3, holder.kill).start()
        started = time.monotonic()
        slot = llm_slot_acquire(config=config)
        waited = time.monotonic() - started
        slot.release()
    # Taken as soon as the kernel dropped the dead holder's lock, well before the wait ended.
    assert 0.25 <= waited < 1.5


def test_waiting_request_gets_a_slot_released_within_its_wait(slot_config) -> None:
    config = slot_config(llm_max_concurrency=1, llm_queue_wait_seconds=2)
    directory = llm_slot_dir(config=config)
    fd = os.open(directory / "slot-0", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    threading.Timer(0.3, os.close, args=(fd,)).start()
    started = time.monotonic()
    with llm_slot(config=config) as slot:
        assert slot is not None
    assert 0.25 <= time.monotonic() - started < 1.5


def test_threads_beyond_the_limit_are_turned_away_without_waiting(slot_config) -> None:
    # Waiting threads would be as unavailable to /health as working ones.
    config = slot_config(llm_max_concurrency=2, llm_queue_wait_seconds=5)
    first, second = llm_slot_acquire(config=config), llm_slot_acquire(config=config)
    try:
        started = time.monotonic()
        with pytest.raises(LLMBusy):
            llm_slot_acquire(config=config)
        assert time.monotonic() - started < 0.5
    finally:
        first.release()
        second.release()
    # Both seats and both slots came back.
    with llm_slot(config=config), llm_slot(config=config):
        pass


def test_release_is_idempotent(slot_config) -> None:
    config = slot_config(llm_max_concurrency=1)
    slot = llm_slot_acquire(config=config)
    slot.release()
    slot.release()
    with llm_slot(config=config) as again:
        assert again is not None


def test_fake_provider_takes_no_slot(slot_config, tmp_path: Path) -> None:
    config = slot_config(llm_provider="fake", llm_max_concurrency=1)
    with held_by_another_process(tmp_path / ".local" / "llm-slots", 1), \
            llm_slot(config=config) as slot:
        assert slot is None
