"""Evaluation through the API, for researchers, maintainers and admins of the bases involved:
question sets and their versions, and runs with their records and results.

Every route checks `Caller.research_check` on each base it touches (NotFound for a base the
caller cannot see, Forbidden for one it only reads), and the lists hold only sets and runs of
bases the caller may research, filtered in SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Max, QuerySet

from access.callers import Caller
from core.config import RETRIEVAL_MODES, get_config
from core.errors import InvalidRequest, NotFound
from evaluation.models import EvalRun, QuestionSet, QuestionSetVersion
from evaluation.runs import run_enqueue, run_settle
from evaluation.versions import (
    question_set_create,
    question_set_revise,
    questions_read,
    version_latest,
    version_of,
)
from knowledge.models import KnowledgeBase
from retrieval.services import top_k_validate

RUN_BASES_MAX = 10


@dataclass(frozen=True)
class QuestionsGiven:
    """A set's questions as a request gives them: a JSON list or the YAML text."""

    questions: list[Any] | None = None
    yaml: str | None = None


@dataclass(frozen=True)
class RunStart:
    """What POST /evaluation/runs asks for."""

    question_set: int
    version: int | None = None  # default: the set's latest
    knowledge_bases: list[str] | None = None  # slugs; default: the set's base
    top_k: int | None = None
    retrieval: str | None = None
    answers: bool = False  # also answer each question (tokens, cost, correctness)


def researchable_ids(caller: Caller) -> list[int]:
    """The bases whose evaluation the caller may see: its researcher, maintainer and admin
    bases among those it reads."""
    return [base_id for base_id in caller.scope().knowledge_base_ids
            if caller.may_research(base_id)]


def set_create(*, caller: Caller, slug: str, name: str, given: QuestionsGiven,
               source_name: str = "") -> QuestionSet:
    """A new set of base `slug` with its version 1."""
    (base_id,) = caller.scope(slugs=[slug]).knowledge_base_ids
    caller.research_check(base_id, what=f"knowledge base {slug}")
    questions = questions_read(yaml_text=given.yaml, entries=given.questions,
                               source="the request's questions")
    return question_set_create(caller=caller, base_id=base_id, name=name, questions=questions,
                               source_name=source_name)


def set_revise(*, caller: Caller, set_id: int, given: QuestionsGiven) -> QuestionSetVersion:
    """New questions for a set (evaluation/versions.py says when that makes a version)."""
    question_set = set_get(caller=caller, set_id=set_id)
    questions = questions_read(yaml_text=given.yaml, entries=given.questions,
                               source="the request's questions")
    return question_set_revise(caller=caller, question_set=question_set, questions=questions)


def sets_list(*, caller: Caller, limit: int, offset: int) -> dict[str, Any]:
    """A page of the sets the caller may research, with their latest version's number."""
    sets = (QuestionSet.objects.filter(knowledge_base_id__in=researchable_ids(caller))
            .select_related("knowledge_base").defer("questions")
            .annotate(latest_version=Max("versions__number"))
            .order_by("knowledge_base__slug", "name", "pk"))
    return {"total": sets.count(), "limit": limit, "offset": offset,
            "question_sets": [set_entry(entry) for entry in sets[offset:offset + limit]]}


def set_get(*, caller: Caller, set_id: int) -> QuestionSet:
    """One set the caller may research."""
    question_set = (QuestionSet.objects.select_related("knowledge_base").defer("questions")
                    .filter(pk=set_id).first())
    if question_set is None:
        raise NotFound(f"question set not found: {set_id}", details={"id": set_id})
    caller.research_check(question_set.knowledge_base_id, what=f"question set {set_id}")
    return question_set


def set_entry(question_set: QuestionSet) -> dict[str, Any]:
    latest = getattr(question_set, "latest_version", None)
    return {"id": question_set.pk, "name": question_set.name,
            "knowledge_base": question_set.knowledge_base.slug,
            "source_name": question_set.source_name, "created_at": question_set.created_at,
            "latest_version": latest if latest is not None else version_latest(
                question_set_id=question_set.pk).number}


def set_detail(*, caller: Caller, set_id: int, version: int | None) -> dict[str, Any]:
    """A set with the questions of one version (its latest by default) and all its versions."""
    question_set = set_get(caller=caller, set_id=set_id)
    shown = version_of(question_set_id=set_id, number=version)
    versions = (QuestionSetVersion.objects.filter(question_set_id=set_id).defer("questions")
                .annotate(run_count=Count("runs")).order_by("number"))
    return {**set_entry(question_set), "version": version_entry(shown),
            "questions": shown.questions,
            "versions": [{**version_entry(entry), "runs": entry.run_count}
                         for entry in versions]}


def version_entry(version: QuestionSetVersion) -> dict[str, Any]:
    return {"number": version.number, "content_hash": version.content_hash,
            "frozen": version.frozen_at is not None, "created_at": version.created_at}


def run_start(*, caller: Caller, request: RunStart) -> EvalRun:
    """Check and queue a run: the set and every base it evaluates must be the caller's to
    research; parameters within the same bounds as /search."""
    question_set = set_get(caller=caller, set_id=request.question_set)
    if request.knowledge_bases is not None:
        slugs = list(dict.fromkeys(request.knowledge_bases))
        if not slugs or len(slugs) > RUN_BASES_MAX:
            raise InvalidRequest(f"knowledge_bases names 1 to {RUN_BASES_MAX} bases",
                                 details={"field": "knowledge_bases"})
        base_ids = list(caller.scope(slugs=slugs).knowledge_base_ids)
    else:
        base_ids = [question_set.knowledge_base_id]
    for base_id in base_ids:
        caller.research_check(base_id, what="knowledge base")
    config = get_config()
    if request.retrieval is not None and request.retrieval not in RETRIEVAL_MODES:
        raise InvalidRequest(f"retrieval must be one of {', '.join(RETRIEVAL_MODES)}",
                             details={"field": "retrieval"})
    parameters = {"top_k": top_k_validate(request.top_k, config=config),
                  "retrieval": request.retrieval or config.rag_retrieval,
                  "answers": request.answers}
    version_of(question_set_id=question_set.pk, number=request.version)  # NotFound first
    return run_enqueue(caller=caller, question_set=question_set, version=request.version,
                       base_ids=base_ids, parameters=parameters)


def runs_researchable(caller: Caller) -> QuerySet[EvalRun]:
    """The runs whose set's base and every evaluated base the caller may research."""
    ids = researchable_ids(caller)
    return (EvalRun.objects.filter(knowledge_base_id__in=ids)
            .filter(knowledge_base_ids__contained_by=ids))


def runs_list(*, caller: Caller, set_id: int | None, limit: int,
              offset: int) -> dict[str, Any]:
    """A page of runs, newest first, of one set when given."""
    runs = runs_researchable(caller)
    if set_id is not None:
        runs = runs.filter(question_set_id=set_id)
    rows = list(runs.select_related("question_set", "set_version", "knowledge_base")
                .defer("report", "question_set__questions", "set_version__questions")
                .order_by("-created_at", "-pk")[offset:offset + limit])
    for run in rows:
        run_settle(run)
    slugs = base_slugs(rows)
    return {"total": runs.count(), "limit": limit, "offset": offset,
            "runs": [run_entry(run, slugs=slugs) for run in rows]}


def run_get(*, caller: Caller, run_id: int, report: bool = False) -> EvalRun:
    """One run the caller may research (every base of it), settled."""
    runs = EvalRun.objects.select_related("question_set", "set_version", "knowledge_base")
    if not report:
        runs = runs.defer("report", "question_set__questions", "set_version__questions")
    run = runs.filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"evaluation run not found: {run_id}", details={"id": run_id})
    for base_id in _checked_ids(run):
        caller.research_check(base_id, what=f"evaluation run {run_id}")
    run_settle(run)
    return run


def run_entry(run: EvalRun, *, slugs: dict[int, str] | None = None) -> dict[str, Any]:
    """A run as the API shows it: its status, record, scores, cost and leakage warnings."""
    progress = getattr(run, "progress", None)
    slugs = slugs if slugs is not None else base_slugs([run])
    return {
        "id": run.pk, "status": run.status, "job_id": run.job_id,
        "question_set": run.question_set_id,
        "set_version": run.set_version.number if run.set_version is not None else None,
        "knowledge_bases": [slugs[base_id] for base_id in _base_ids(run) if base_id in slugs],
        "parameters": run.parameters,
        "config_hash": run.config_hash or None, "prompt_version": run.prompt_version or None,
        "code_version": run.code_version or None, "corpus_digest": run.corpus_digest or None,
        "summary": run.summary, "cost": run.cost, "leakage": run.leakage,
        "error": run.error or None,
        "progress": ({"stage": progress.stage, "fraction": progress.fraction}
                     if progress is not None else None),
        "created_at": run.created_at, "finished_at": run.finished_at}


def base_slugs(runs: list[EvalRun]) -> dict[int, str]:
    """The slugs of every base of these runs, in one query."""
    ids = {base_id for run in runs for base_id in _base_ids(run)}
    return dict(KnowledgeBase.objects.filter(pk__in=ids).values_list("pk", "slug"))


def _base_ids(run: EvalRun) -> list[int]:
    return list(run.knowledge_base_ids or [run.knowledge_base_id])


def _checked_ids(run: EvalRun) -> list[int]:
    # The set's base too: the results show its questions.
    return list(dict.fromkeys([run.knowledge_base_id, *_base_ids(run)]))
