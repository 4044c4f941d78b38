"""Cancelling a running document job, or stopping its worker, stops its ingest at the next safe
point: nothing of it is written and the folder's lock is released at once; a cancelled upload
says it was cancelled, a handed-back one is built by the next worker."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

import pytest
from django.db import connection

from embeddings import FakeLexicalEmbedder
from jobs.queue import job_cancel, job_get
from jobs.worker import Worker
from knowledge.ingest import IngestRequest, vault_ingest
from tests.api.test_documents import MARKER, upload
from tests.harness import ADVISORY_LOCKS_HERE
from tests.jobs.support import HeldJob
from tests.parsing.formats.files import pdf_bytes


def test_a_checkpoint_that_raises_stops_the_run_with_nothing_written_and_the_lock_free(
        clean_tables, tmp_path, config_override):
    config = config_override()
    vault = tmp_path / "vault"
    vault.mkdir()
    for number in range(3):
        (vault / f"note{number}.md").write_text(f"# Note {number}\n\nText {number}.\n")
    calls = []

    def checkpoint() -> None:
        calls.append(1)
        if len(calls) == 4:  # after the files are read, before the batch is embedded
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0, checkpoint=checkpoint),
                     config=config)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents")
        assert cursor.fetchone() == (0,)
        cursor.execute("SELECT status FROM ingest_runs ORDER BY id DESC LIMIT 1")
        assert cursor.fetchone() == ("failed",)
    # The folder's lock went with the run: the next one needs no wait.
    assert vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0),
                        config=config).documents_added == 3


@dataclass
class BlockedUpload(HeldJob):
    """An uploaded PDF whose job is running on `worker`'s thread, held inside its embedding
    step until `release` is set."""

    body: dict


@pytest.fixture
def blocked_upload(client, clean_tables, project, monkeypatch):
    embedding, release = threading.Event(), threading.Event()
    original = FakeLexicalEmbedder.embed_documents

    def slow(self, chunks):
        if not release.is_set():
            embedding.set()
            assert release.wait(30)
        return original(self, chunks)

    monkeypatch.setattr(FakeLexicalEmbedder, "embed_documents", slow)
    body = json.loads(upload(client, "slow.pdf", pdf_bytes([MARKER * 3])).content)
    worker = Worker(poll_seconds=0.01)
    thread = threading.Thread(target=worker.run, kwargs={"until_idle": True})
    thread.start()
    assert embedding.wait(30), "the job never reached the embedding"
    return BlockedUpload(body=body, worker=worker, thread=thread, release=release)


def test_cancelling_a_running_upload_job_stops_it_and_settles_the_document(blocked_upload):
    body = blocked_upload.body
    assert job_cancel(body["job_id"]).status == "cancelled"
    stopped = blocked_upload.finish()
    assert stopped < 10, f"the job ran on for {stopped:.1f} s after it was cancelled"
    assert job_get(body["job_id"]).status == "cancelled"
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, (SELECT count(*) FROM chunks) FROM documents WHERE id = %s",
                       [body["document_id"]])
        assert cursor.fetchone() == ("failed", 0)
        cursor.execute("SELECT metadata->>'error' FROM documents WHERE id = %s",
                       [body["document_id"]])
        assert cursor.fetchone() == ("the job was cancelled",)
    # No advisory lock is left behind for the folder.
    with connection.cursor() as cursor:
        cursor.execute(ADVISORY_LOCKS_HERE)
        assert cursor.fetchone() == (0,)


def test_a_stopping_worker_hands_a_running_upload_back_and_the_next_one_builds_it(
        blocked_upload):
    body = blocked_upload.body
    blocked_upload.worker.stop()  # what SIGTERM does to `rag serve`'s and `rag worker`'s worker
    blocked_upload.finish()
    job = job_get(body["job_id"])
    assert (job.status, job.attempt) == ("queued", 0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT status FROM documents WHERE id = %s", [body["document_id"]])
        assert cursor.fetchone() == ("queued",)
        cursor.execute(ADVISORY_LOCKS_HERE)
        assert cursor.fetchone() == (0,)
    Worker(poll_seconds=0.01).run(until_idle=True)  # embedding is no longer held
    assert job_get(body["job_id"]).status == "succeeded"
    with connection.cursor() as cursor:
        cursor.execute("SELECT status FROM documents WHERE id = %s", [body["document_id"]])
        assert cursor.fetchone() == ("active",)
