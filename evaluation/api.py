"""The evaluation API, for researchers, maintainers and admins of the bases involved: question
sets (`/evaluation/sets`, versioned), runs (`/evaluation/runs`, queued as jobs), a run's
results and its export as CSV or JSON."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpResponse
from ninja import Path, Query, Router
from ninja.responses import Status

from access.auth import CallerRequest
from core.api_schemas import ErrorBody
from evaluation import research
from evaluation.api_schemas import (
    BIGINT_MAX,
    PAGE_MAX,
    QuestionSetCreate,
    QuestionSetDetail,
    QuestionSetPage,
    QuestionSetRevise,
    ResultPage,
    RunCreate,
    RunOut,
    RunPage,
)
from evaluation.export import results_page, run_export

router = Router(tags=["evaluation"])

ERRORS = {code: ErrorBody for code in (401, 403, 404, 409, 413, 422, 503)}
SetId = Path(..., ge=1, le=BIGINT_MAX)
RunId = Path(..., ge=1, le=BIGINT_MAX)


@router.post("/evaluation/sets", response={201: QuestionSetDetail, **ERRORS},
             summary="Create a question set (JSON `questions`, or YAML text in `yaml`)")
def set_create_view(request: CallerRequest, payload: QuestionSetCreate) -> Status[dict[str, Any]]:
    question_set = research.set_create(
        caller=request.auth, slug=payload.knowledge_base, name=payload.name,
        given=research.QuestionsGiven(questions=payload.questions, yaml=payload.yaml),
        source_name=payload.source_name)
    return Status(201, research.set_detail(caller=request.auth, set_id=question_set.pk,
                                           version=None))


@router.get("/evaluation/sets", response={200: QuestionSetPage, **ERRORS},
            summary="The question sets of the bases the caller may research")
def sets_view(request: CallerRequest, limit: int = Query(50, ge=1, le=PAGE_MAX),
              offset: int = Query(0, ge=0, le=BIGINT_MAX)) -> dict[str, Any]:
    return research.sets_list(caller=request.auth, limit=limit, offset=offset)


@router.get("/evaluation/sets/{set_id}", response={200: QuestionSetDetail, **ERRORS},
            summary="A question set with the questions of one version (default: the latest)")
def set_view(request: CallerRequest, set_id: int = SetId,
             version: int | None = Query(None, ge=1, le=2 ** 31 - 1)) -> dict[str, Any]:
    return research.set_detail(caller=request.auth, set_id=set_id, version=version)


@router.put("/evaluation/sets/{set_id}", response={200: QuestionSetDetail, **ERRORS},
            summary="New questions for a set: a new version once a run used the latest")
def set_revise_view(request: CallerRequest, payload: QuestionSetRevise,
                    set_id: int = SetId) -> dict[str, Any]:
    version = research.set_revise(
        caller=request.auth, set_id=set_id,
        given=research.QuestionsGiven(questions=payload.questions, yaml=payload.yaml))
    return research.set_detail(caller=request.auth, set_id=set_id, version=version.number)


@router.post("/evaluation/runs", response={202: RunOut, **ERRORS},
             summary="Start a run of a question set version: 202 with the queued run")
def run_create_view(request: CallerRequest, payload: RunCreate) -> Status[dict[str, Any]]:
    run = research.run_start(caller=request.auth, request=research.RunStart(
        **payload.model_dump()))
    return Status(202, research.run_entry(run))


@router.get("/evaluation/runs", response={200: RunPage, **ERRORS},
            summary="Runs of the bases the caller may research, newest first")
def runs_view(request: CallerRequest,
              question_set: int | None = Query(None, ge=1, le=BIGINT_MAX),
              limit: int = Query(50, ge=1, le=PAGE_MAX),
              offset: int = Query(0, ge=0, le=BIGINT_MAX)) -> dict[str, Any]:
    return research.runs_list(caller=request.auth, set_id=question_set, limit=limit,
                              offset=offset)


@router.get("/evaluation/runs/{run_id}", response={200: RunOut, **ERRORS},
            summary="A run: status, record (versions, hashes, digest), scores, cost, leakage")
def run_view(request: CallerRequest, run_id: int = RunId) -> dict[str, Any]:
    return research.run_entry(research.run_get(caller=request.auth, run_id=run_id))


@router.get("/evaluation/runs/{run_id}/results", response={200: ResultPage, **ERRORS},
            summary="A page of a run's per-question results")
def run_results_view(request: CallerRequest, run_id: int = RunId,
                     limit: int = Query(50, ge=1, le=PAGE_MAX),
                     offset: int = Query(0, ge=0, le=BIGINT_MAX)) -> dict[str, Any]:
    return results_page(caller=request.auth, run_id=run_id, limit=limit, offset=offset)


@router.get("/evaluation/runs/{run_id}/export", response={200: None, **ERRORS},
            summary="A finished run as a file: ?format=csv or json")
def run_export_view(request: CallerRequest, run_id: int = RunId,
                    format: Literal["csv", "json"] = "json") -> HttpResponse:
    exported = run_export(caller=request.auth, run_id=run_id, format=format)
    response = HttpResponse(exported.content, content_type=exported.content_type)
    response["Content-Disposition"] = f'attachment; filename="{exported.filename}"'
    return response
