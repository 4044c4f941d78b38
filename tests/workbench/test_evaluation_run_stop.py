"""An evaluation run's job stops between two questions: cancelled, it ends within one question
and the run reads as failed; handed back by a stopping worker, it is queued again, its attempt
not spent, and the next worker runs it to its end."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model

import evaluation.questions
from access.callers import caller_for_user
from core.config import get_config
from evaluation.models import EvalRun
from evaluation.runs import question_set_import, run_launch, run_visible
from jobs.queue import job_cancel, job_get
from jobs.worker import Worker
from knowledge.ingest import IngestRequest, vault_ingest
from tests.harness import ROOT

QUESTION_SECONDS = 0.2


@dataclass
class RunningEvaluation:
    """A run of the sample questions on `worker`'s thread, each question taking
    QUESTION_SECONDS; `asked` counts the questions started."""

    run: EvalRun
    worker: Worker
    thread: threading.Thread
    asked: list[str]
    questions: int

    def ended_after(self, started: float) -> float:
        self.thread.join(30)
        assert not self.thread.is_alive()
        return time.monotonic() - started


@pytest.fixture
def running_evaluation(clean_tables, monkeypatch):
    vault_ingest(IngestRequest(vault_path=ROOT / "samples" / "acme-vault", prepare_workers=0),
                 config=get_config())
    user = get_user_model().objects.create_superuser(username="evaluator", password="unused-pw-1x")
    caller = caller_for_user(user)
    question_set = question_set_import(
        caller=caller, slug="default", name="demo",
        text=(ROOT / "eval" / "questions.yaml").read_text(encoding="utf-8"))
    asked: list[str] = []
    original = evaluation.questions._question_run

    def slow_question(**arguments):
        asked.append(arguments["question"].id)
        time.sleep(QUESTION_SECONDS)
        return original(**arguments)

    monkeypatch.setattr(evaluation.questions, "_question_run", slow_question)
    run = run_launch(caller=caller, set_id=question_set.pk, top_k=5)
    worker = Worker(poll_seconds=0.01)
    thread = threading.Thread(target=worker.run, kwargs={"until_idle": True})
    thread.start()
    deadline = time.monotonic() + 30
    while len(asked) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(asked) >= 3, "the run never got to its third question"
    return RunningEvaluation(run=run, worker=worker, thread=thread, asked=asked,
                             questions=len(question_set.questions))


def test_a_cancelled_evaluation_run_stops_within_one_question(running_evaluation):
    running = running_evaluation
    asked = time.monotonic()
    assert job_cancel(running.run.job_id).status == "cancelled"
    latency = running.ended_after(asked)
    assert latency < QUESTION_SECONDS + 1, f"ran on for {latency:.2f} s after the cancel"
    assert len(running.asked) < running.questions
    assert job_get(running.run.job_id).status == "cancelled"
    run = run_visible(caller=caller_for_user(running.run.created_by), run_id=running.run.pk)
    assert run.status == EvalRun.FAILED and "the job was cancelled" in run.error
    assert run.summary == {}


def test_a_stopping_worker_hands_an_evaluation_run_back_and_the_next_one_finishes_it(
        running_evaluation):
    running = running_evaluation
    asked = time.monotonic()
    running.worker.stop()  # what SIGTERM does to `rag serve`'s and `rag worker`'s worker
    latency = running.ended_after(asked)
    assert latency < QUESTION_SECONDS + 1, f"ran on for {latency:.2f} s after the stop"
    job = job_get(running.run.job_id)
    assert (job.status, job.attempt, job.lease_owner) == ("queued", 0, None)
    stopped_at = len(running.asked)
    assert stopped_at < running.questions
    Worker(poll_seconds=0.01).run(until_idle=True)
    assert job_get(running.run.job_id).status == "succeeded"
    run = EvalRun.objects.get(pk=running.run.pk)
    assert run.status == EvalRun.DONE
    assert run.summary["questions"] == running.questions
    assert len(running.asked) == stopped_at + running.questions  # the next run asked them all
