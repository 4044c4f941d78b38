"""One writer per base across processes, and what a writer killed half-way leaves: the index it
was replacing still serves, searches stay exact, and the next catch-up removes its remains."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from core.config import get_config
from index.maintenance import base_catch_up
from index.store import manifest_read, writer_lock
from retrieval.lexical import LexicalReport, lexical_search
from tests.conftest import cli_env
from tests.harness import ROOT
from tests.index.helpers import base_folder, built, database_generation, lexical_bases
from tests.retrieval.test_lexical_pruning import chunks_add, queries_make

pytestmark = pytest.mark.usefixtures("clean_tables")


def test_a_second_writer_waits_or_skips():
    _, _, (first, _) = lexical_bases(31, chunks=(80, 5))
    folder = base_folder(first)
    chunks_add(base_id=first, document_path="w.md", rows=[("waiting words", [], "w.md")])
    finished = threading.Event()
    with writer_lock(folder, wait=True):
        skipped = base_catch_up(knowledge_base_id=first, wait=False)
        assert (skipped.lexical, skipped.vectors) == ("skipped", "skipped")
        waiting = threading.Thread(target=lambda: (base_catch_up(knowledge_base_id=first),
                                                   finished.set()))
        waiting.start()
        time.sleep(0.5)
        assert not finished.is_set()  # blocked on the lock this test holds
    waiting.join(timeout=30)
    assert finished.is_set()
    manifest = manifest_read(folder)
    assert manifest is not None and manifest.lexical is not None
    assert manifest.lexical.generation == database_generation(first)


def test_a_rebuild_killed_half_way_leaves_the_index_serving_and_exact():
    rng, words, (first, _) = lexical_bases(32, chunks=(3000, 5))
    built(first)
    folder = base_folder(first)
    serving = manifest_read(folder)
    assert serving is not None and serving.lexical is not None
    rebuild = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "index", "rebuild", "--kb", "b32-0"],
        cwd=ROOT, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    half_built = []
    while time.monotonic() < deadline and rebuild.poll() is None and not half_built:
        half_built = [entry for entry in folder.glob("lexical-*")
                      if entry.name != serving.lexical.folder]
        time.sleep(0.002)
    os.kill(rebuild.pid, signal.SIGKILL)
    rebuild.wait()
    if not half_built:
        pytest.fail("the rebuild finished before a new folder was seen: make the corpus larger")
    manifest = manifest_read(folder)
    assert manifest is not None and manifest.lexical is not None
    assert manifest.lexical.folder == serving.lexical.folder  # never switched to half an index
    for query in queries_make(rng, words, 10):
        report = LexicalReport()
        hits = lexical_search(query=query, limit=10, knowledge_base_ids=[first], report=report)
        exhaustive = lexical_search(query=query, limit=10, knowledge_base_ids=[first],
                                    exhaustive=True)
        assert [(hit.chunk_id, hit.score) for hit in hits] == [
            (hit.chunk_id, hit.score) for hit in exhaustive]
        if hits:
            assert report.index is not None and report.index["path"] == "index"
    outcome = base_catch_up(knowledge_base_id=first, config=get_config(), rebuild=True)
    assert outcome.lexical == "rebuilt"
    assert sorted(entry.name for entry in folder.glob("lexical-*")) == [
        manifest_read(folder).lexical.folder]  # the killed build's folder is gone
