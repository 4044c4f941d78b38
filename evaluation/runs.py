"""Evaluation runs from the workbench: question sets imported from the `rag eval` YAML format, and
runs of a set against its knowledge base as background jobs (`eval_run`).

Every read goes through the caller: a set or run of a base the caller may not read is not
found, exactly like one that does not exist. A run evaluates its set's base only (a Scope of
that one base; a run started through the API may name other bases, evaluation/research.py),
and only while its creator may read them: checked at launch, and again when the job starts,
because a grant may be withdrawn while the job waits in the queue. A run evaluates one version
of its set (evaluation/versions.py), frozen from then on, and records what makes it
reproducible (evaluation/records.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Func, IntegerField, QuerySet
from django.utils import timezone

from access.callers import OPERATOR, Caller, Scope, caller_for_user
from core.config import RETRIEVAL_MODES, Config, get_config
from core.errors import InvalidRequest, LocalRagError, NotFound
from evaluation.answers import answers_score, answers_summary
from evaluation.apps import JOB_EVAL_RUN
from evaluation.models import EvalRun, QuestionSet
from evaluation.progress import RunProgress
from evaluation.questions import Question, evaluate
from evaluation.records import leakage_find, leakage_log, run_record
from evaluation.versions import (
    question_set_create,
    questions_read,
    version_freeze,
    version_of,
)
from jobs.queue import JobRecord, job_enqueue, job_get
from jobs.worker import JobContext, JobPermanentError, LeaseLost
from retrieval.services import top_k_validate

# One retry rides out a database restart; a domain error (nothing indexed, a bad setting)
# fails at once, since a retry minutes later would only make the page wait for the same error.
RUN_ATTEMPTS = 2
HISTORY_LIMIT = 100
JOB_ENDED = ("failed", "cancelled")
# The question file the project ships, importable as a set by name.
SHIPPED_QUESTIONS_NAME = "eval/questions.yaml"


def question_set_import(*, caller: Caller, slug: str, name: str, text: str,
                        source_name: str = "") -> QuestionSet:
    """Check questions in the `rag eval` YAML format and store them as a set of base `slug`;
    InvalidRequest lists every problem in details["errors"], and nothing is stored then."""
    name = name.strip()
    if not name:
        raise InvalidRequest("the question set needs a name",
                             details={"errors": ["the question set needs a name"]})
    (base_id,) = caller.scope(slugs=[slug]).knowledge_base_ids
    questions = questions_read(yaml_text=text, entries=None,
                               source=source_name or "the pasted questions")
    return question_set_create(caller=caller, base_id=base_id, name=name, questions=questions,
                               source_name=source_name)


def shipped_questions(*, config: Config) -> Path | None:
    """The project's eval/questions.yaml (what `rag eval` reads by default), when it is there:
    the evaluation panel offers it without an upload."""
    path = (config.project_root or Path.cwd()) / SHIPPED_QUESTIONS_NAME
    return path if path.is_file() else None


def question_sets_visible(*, caller: Caller) -> QuerySet[QuestionSet]:
    """The sets of the bases the caller may read, with their numbers of questions and runs
    (counted in the query: the questions themselves are not loaded)."""
    return (QuestionSet.objects.filter(knowledge_base_id__in=_readable(caller))
            .select_related("knowledge_base").defer("questions")
            .annotate(run_count=Count("runs"),
                      question_count=Func(F("questions"), function="jsonb_array_length",
                                          output_field=IntegerField()))
            .order_by("knowledge_base__slug", "name"))


def question_set_visible(*, caller: Caller, set_id: int) -> QuestionSet:
    """One set; NotFound alike for a missing one and one of a base the caller may not read."""
    question_set = QuestionSet.objects.select_related("knowledge_base").filter(pk=set_id).first()
    if question_set is None or not caller.may_read(question_set.knowledge_base_id):
        raise NotFound(f"question set not found: {set_id}", details={"id": set_id})
    return question_set


def run_launch(*, caller: Caller, set_id: int, top_k: int | None,
               retrieval: str | None = None) -> EvalRun:
    """Queue a run of a set the caller may read, at `top_k` and with `retrieval` (default: the
    configured RAG_RETRIEVAL); the run row and its job are written together."""
    question_set = question_set_visible(caller=caller, set_id=set_id)
    config = get_config()
    if retrieval and retrieval not in RETRIEVAL_MODES:
        raise InvalidRequest(f"retrieval must be one of {', '.join(RETRIEVAL_MODES)}",
                             details={"field": "retrieval"})
    parameters = {"top_k": top_k_validate(top_k, config=config),
                  "retrieval": retrieval or config.rag_retrieval}
    return run_enqueue(caller=caller, question_set=question_set, version=None,
                       base_ids=[question_set.knowledge_base_id], parameters=parameters)


def run_enqueue(*, caller: Caller, question_set: QuestionSet, version: int | None,
                base_ids: list[int], parameters: dict[str, Any]) -> EvalRun:
    """Write a run of version `version` of a set (its latest when None) over `base_ids` (the
    run's `knowledge_base` stays the set's, whose questions it shows), freeze
    that version, and queue the run's job, all together (the caller's rights are checked by
    whoever calls this)."""
    if caller.user_id is None and caller.admin:
        # The operator or RAG_API_TOKEN: no person whose rights the job checks again.
        parameters = {**parameters, "launched_by": "admin"}
    with transaction.atomic():
        # The set's row locked: an edit cannot replace the version between reading and freezing.
        QuestionSet.objects.select_for_update().filter(pk=question_set.pk).first()
        set_version = version_of(question_set_id=question_set.pk, number=version)
        version_freeze(set_version)
        run = EvalRun.objects.create(question_set=question_set, set_version=set_version,
                                     knowledge_base_id=question_set.knowledge_base_id,
                                     knowledge_base_ids=sorted(set(base_ids)),
                                     created_by_id=caller.user_id, parameters=parameters)
        run.job_id = job_enqueue(type=JOB_EVAL_RUN, resource=f"eval_run:{run.pk}",
                                 payload={"run_id": run.pk}, max_attempts=RUN_ATTEMPTS)
        run.save(update_fields=["job_id"])
    return run


def runs_visible(*, caller: Caller, set_id: int | None = None,
                 limit: int = HISTORY_LIMIT) -> list[EvalRun]:
    """The newest runs first, of the bases the caller may read (and of one set when given)."""
    readable = _readable(caller)
    # Every base a run evaluated, not only its set's: a run over two bases shows both's sources.
    runs = EvalRun.objects.filter(knowledge_base_id__in=readable,
                                  knowledge_base_ids__contained_by=list(readable))
    if set_id is not None:
        runs = runs.filter(question_set_id=set_id)
    # Not the reports nor the sets' questions: the history reads the summaries only.
    rows = list(runs.select_related("question_set", "created_by")
                .defer("report", "question_set__questions")
                .order_by("-created_at", "-pk")[:limit])
    for run in rows:
        run_settle(run)
    return rows


def run_visible(*, caller: Caller, run_id: int) -> EvalRun:
    """One run, settled; NotFound alike for a missing one and one of a hidden base."""
    run = EvalRun.objects.select_related("question_set", "created_by").filter(pk=run_id).first()
    if run is None or not all(caller.may_read(base_id) for base_id in
                              (run.knowledge_base_id, *run.knowledge_base_ids)):
        raise NotFound(f"evaluation run not found: {run_id}", details={"id": run_id})
    run_settle(run)
    return run


def run_settle(run: EvalRun) -> None:
    """Read an unfinished run's job once: mark the run failed when the job ended without it
    (cancelled, or failed where the handler could not say so: a worker killed on the last
    attempt), and keep the job's progress as `run.progress` (None for a finished run)."""
    run.progress = None
    if run.status not in (EvalRun.QUEUED, EvalRun.RUNNING) or run.job_id is None:
        return
    try:
        job = job_get(run.job_id)
    except NotFound:
        job = None
    if job is not None and job.status not in JOB_ENDED:
        run.progress = _progress(job)
        return
    error = (f"the job was {job.status}: {job.last_error or 'no reason recorded'}"
             if job is not None else "the job of this run no longer exists")
    _run_fail(run, error)


def _progress(job: JobRecord) -> RunProgress:
    if job.status == "queued":
        waiting = "waiting to try again" if job.attempt else "waiting for a worker"
        return RunProgress(stage=waiting, fraction=0.0)
    return RunProgress(stage=job.stage or job.status, fraction=job.progress or 0.0)


def eval_run_job(context: JobContext) -> dict[str, Any]:
    """Evaluate a run's set version against the knowledge bases it names only (its set's base
    unless the API named others), answering the questions too when it asked for answers, and
    store the scores, the full report and the run's record (idempotent: a finished run is left
    as it is)."""
    run = (EvalRun.objects.select_related("question_set", "set_version", "created_by")
           .filter(pk=int(context.payload["run_id"])).first())
    if run is None:
        return {"skipped": "the run no longer exists"}
    if run.status in (EvalRun.DONE, EvalRun.FAILED):
        return {"run_id": run.pk, "status": run.status}
    base_ids = run.knowledge_base_ids or [run.knowledge_base_id]
    if run.created_by is not None:
        creator: Caller | None = caller_for_user(run.created_by)
    else:  # launched by an admin without a person, or by a person deleted since
        creator = OPERATOR if run.parameters.get("launched_by") == "admin" else None
    if creator is None or not all(creator.may_research(base_id)
                                  for base_id in (run.knowledge_base_id, *base_ids)):
        reason = ("the person who launched this run may no longer research its knowledge "
                  "bases (it takes the researcher role, or maintainer)")
        _run_fail(run, reason)
        raise JobPermanentError(reason)
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.RUNNING)
    config = get_config()
    config = dataclasses.replace(config, rag_retrieval=run.parameters.get("retrieval")
                                 or config.rag_retrieval)

    def progress(done: int, total: int) -> None:
        # Before each question, a safe point: nothing of the run is stored before its end, so a
        # cancel, or a worker that stops (the job goes back to the queue), takes effect within
        # one question.
        context.checkpoint()
        context.progress(f"question {done + 1} of {total}", done / total)

    def answer_progress(done: int, total: int) -> None:
        context.checkpoint()
        context.progress(f"answer {done + 1} of {total}", done / total)

    entries = (run.set_version.questions if run.set_version is not None
               else run.question_set.questions)
    questions = [Question(**entry) for entry in entries]
    scope = Scope.of(base_ids)
    top_k = int(run.parameters["top_k"])
    answers: dict[str, dict[str, Any]] = {}
    try:
        record = run_record(config=config, scope=scope)
        leakage = leakage_find(questions=questions, scope=scope)
        report = evaluate(questions=questions, top_k=top_k, config=config, scope=scope,
                          progress=progress)
        if run.parameters.get("answers"):
            answers = answers_score(questions=questions, scope=scope, top_k=top_k,
                                    config=config, progress=answer_progress)
    except LeaseLost:
        # Cancelled, handed back by a stopping worker, or another worker's now: nothing of this
        # attempt is recorded (a cancelled run reads as failed once its page settles it).
        raise
    except LocalRagError as exc:
        _run_fail(run, f"{exc.code}: {exc.message}")
        raise JobPermanentError(exc.message) from exc
    except Exception as exc:
        if context.attempt >= context.max_attempts:
            _run_fail(run, f"{type(exc).__name__}: {exc}")
        raise
    context.progress("saving", 1.0)
    parameters = {**run.parameters, "threshold": report["threshold"],
                  "rerank": config.rag_rerank,
                  "embedding": f"{report['embedding_provider']}/{report['embedding_model']}",
                  "settings": record.settings}
    cost = None
    if run.parameters.get("answers"):
        for row in report["questions"]:
            row.update(answers.get(row["id"], {}))
        totals = answers_summary(answers)
        cost = totals.pop("cost")
        report["summary"].update(totals)
    report["leakage"] = leakage
    leakage_log(run_id=run.pk, leakage=leakage)
    EvalRun.objects.filter(pk=run.pk).update(
        status=EvalRun.DONE, summary=report["summary"], report=report, parameters=parameters,
        error="", finished_at=timezone.now(), config_hash=record.config_hash,
        prompt_version=record.prompt_version, code_version=record.code_version,
        corpus_digest=record.corpus_digest, leakage=leakage, cost=cost)
    return {"run_id": run.pk, "questions": report["summary"]["questions"],
            "passed": report["summary"]["passed"]}


def _run_fail(run: EvalRun, error: str) -> None:
    run.status, run.error, run.finished_at = EvalRun.FAILED, error, timezone.now()
    # Only an unfinished run: a page settling it must not undo a result stored meanwhile.
    EvalRun.objects.filter(pk=run.pk, status__in=(EvalRun.QUEUED, EvalRun.RUNNING)).update(
        status=run.status, error=error, finished_at=run.finished_at)


def _readable(caller: Caller) -> tuple[int, ...]:
    return caller.scope().knowledge_base_ids

