"""A reindex job stops at the ingest's next safe point: cancelled, the document keeps the
version it had (active, searchable, its chunks untouched); handed back by a stopping worker,
it is queued again, its attempt not spent, and the next worker rebuilds the document. Either
way no advisory lock is left behind."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest
from django.db import connection

from access.callers import OPERATOR
from embeddings import FakeLexicalEmbedder
from jobs.queue import job_cancel, job_get
from jobs.worker import Worker
from knowledge.bases import kb_create
from knowledge.documents import document_reindex, document_upload
from tests.harness import ADVISORY_LOCKS_HERE
from tests.jobs.support import HeldJob
from tests.parsing.formats.files import pdf_bytes

TEXT = "Cassiterite greisen veins at Ridge 4 carry tin near 0.6 percent Sn. "


def document_state(document_id: int) -> tuple:
    """(status, active version id, chunks) of a document."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, active_version_id, (SELECT count(*) FROM chunks "
                       "WHERE document_id = %s) FROM documents WHERE id = %s",
                       [document_id, document_id])
        return cursor.fetchone()


def advisory_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute(ADVISORY_LOCKS_HERE)
        return cursor.fetchone()[0]


@dataclass
class HeldReindex(HeldJob):
    """A built document whose reindex job runs on `worker`'s thread, held inside its
    embedding step until `release` is set."""

    document_id: int
    job_id: int
    built: tuple


@pytest.fixture
def held_reindex(clean_tables, config_override, tmp_path, monkeypatch):
    config_override(project_root=tmp_path)
    kb_create(slug="field", name="Field reports")
    upload = document_upload(caller=OPERATOR, slug="field", filename="Ridge 4.pdf",
                             chunks=[pdf_bytes([TEXT * 4, "Page two: camp and road."])])
    Worker(poll_seconds=0.01).run(until_idle=True)
    built = document_state(upload.document_id)
    assert built[0] == "active" and built[2] >= 1
    embedding, release = threading.Event(), threading.Event()
    original = FakeLexicalEmbedder.embed_documents

    def held(self, chunks):
        if not release.is_set():
            embedding.set()
            assert release.wait(30)
        return original(self, chunks)

    monkeypatch.setattr(FakeLexicalEmbedder, "embed_documents", held)
    job_id = document_reindex(caller=OPERATOR, document_id=upload.document_id)
    worker = Worker(poll_seconds=0.01)
    thread = threading.Thread(target=worker.run, kwargs={"until_idle": True})
    thread.start()
    assert embedding.wait(30), "the reindex never reached the embedding"
    return HeldReindex(document_id=upload.document_id, job_id=job_id, built=built,
                       worker=worker, thread=thread, release=release)


def test_a_cancelled_reindex_stops_and_the_document_keeps_its_version(held_reindex):
    assert job_cancel(held_reindex.job_id).status == "cancelled"
    stopped = held_reindex.finish()
    assert stopped < 5, f"the reindex ran on for {stopped:.1f} s after it was cancelled"
    assert job_get(held_reindex.job_id).status == "cancelled"
    assert document_state(held_reindex.document_id) == held_reindex.built
    assert advisory_locks() == 0


def test_a_stopping_worker_hands_a_reindex_back_and_the_next_one_rebuilds_it(held_reindex):
    held_reindex.worker.stop()  # what SIGTERM does to `rag serve`'s and `rag worker`'s worker
    stopped = held_reindex.finish()
    assert stopped < 5, f"the reindex ran on for {stopped:.1f} s after the worker was stopped"
    job = job_get(held_reindex.job_id)
    assert (job.status, job.attempt, job.lease_owner) == ("queued", 0, None)
    status, version, chunks = document_state(held_reindex.document_id)
    # Still the version it had, waiting for its rebuild.
    assert (status, version, chunks) == ("queued", *held_reindex.built[1:])
    assert advisory_locks() == 0
    Worker(poll_seconds=0.01).run(until_idle=True)
    assert job_get(held_reindex.job_id).status == "succeeded"
    status, version, chunks = document_state(held_reindex.document_id)
    assert status == "active" and version != held_reindex.built[1] and chunks >= 1
