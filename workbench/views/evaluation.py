"""Evaluation: import question sets (the `rag eval` YAML format), launch runs as background
jobs, follow them, read their history, compare two runs and chart a set's runs: for people
who research a knowledge base (researchers, maintainers), over the bases they study.

A set or run of a base the person may not read answers 404, exactly like a missing one; one of
a base they only read answers 403."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from core.config import get_config
from core.errors import LocalRagError
from evaluation.models import EvalRun, QuestionSet
from evaluation.runs import (
    question_set_import,
    question_set_visible,
    question_sets_visible,
    run_launch,
    run_visible,
    runs_visible,
    shipped_questions,
)
from knowledge.selectors import kb_list_visible
from workbench.answer_texts import error_shown
from workbench.auth import PersonRequest, research_view
from workbench.forms import QuestionSetImportForm, RunLaunchForm
from workbench.pages.evaluation_report import (
    METRICS,
    RUN_METRICS,
    charts_build,
    run_row,
    runs_compare,
)


@require_GET
@research_view
def panel(request: PersonRequest) -> HttpResponse:
    return _panel(request)


@require_POST
@research_view
def set_import(request: PersonRequest) -> HttpResponse:
    studied = request.caller.researching()
    form = QuestionSetImportForm(request.POST, request.FILES,
                                 bases=kb_list_visible(caller=studied),
                                 shipped=shipped_questions(config=get_config()))
    if form.is_valid():
        data = form.cleaned_data
        try:
            question_set = question_set_import(
                caller=studied, slug=data["knowledge_base"], name=data["name"],
                text=data["yaml_text"], source_name=data["source_name"])
        except LocalRagError as exc:
            # A question set's own mistakes, one per line and position, else the error.
            for message in exc.details.get("errors") or [error_shown(exc)]:
                form.add_error(None, message)
        else:
            return redirect(f"{reverse('workbench:evaluation')}?set={question_set.pk}")
    return _panel(request, import_form=form, status=422)


@require_POST
@research_view
def run_start(request: PersonRequest) -> HttpResponse:
    studied = request.caller.researching()
    sets = list(question_sets_visible(caller=studied))
    form = RunLaunchForm(request.POST, sets=sets, configured_retrieval=get_config().rag_retrieval)
    if form.is_valid():
        data = form.cleaned_data
        try:
            run = run_launch(caller=studied, set_id=data["question_set"],
                             top_k=data["top_k"], retrieval=data["retrieval"] or None)
        except LocalRagError as exc:
            form.add_error(None, error_shown(exc))
        else:
            return redirect("workbench:eval-run", run_id=run.pk)
    return _panel(request, launch_form=form, status=422)


@require_GET
@research_view
def set_detail(request: PersonRequest, set_id: int) -> HttpResponse:
    question_set = _set_studied(request, set_id)
    return render(request, "workbench/eval_set.html", {"question_set": question_set})


@require_GET
@research_view
def run_detail(request: PersonRequest, run_id: int) -> HttpResponse:
    run = _run_studied(request, run_id)
    return render(request, "workbench/eval_run.html",
                  {"row": run_row(run, metrics=RUN_METRICS), "metrics": RUN_METRICS})


@require_GET
@research_view
def run_status(request: PersonRequest, run_id: int) -> HttpResponse:
    """The run page's status card (polled while the run is unfinished). Once the run has
    finished, htmx is told to reload the page, which then shows the scores."""
    row = run_row(_run_studied(request, run_id))
    response = render(request, "workbench/_eval_run_status.html", {"row": row})
    if request.headers.get("HX-Request") and not row.unfinished:
        response["HX-Refresh"] = "true"
    return response


@require_GET
@research_view
def run_history_row(request: PersonRequest, run_id: int) -> HttpResponse:
    """One row of the history table (polled while the run is unfinished)."""
    run = _run_studied(request, run_id)
    return render(request, "workbench/_eval_run_row.html", {"row": run_row(run)})


@require_GET
@research_view
def compare(request: PersonRequest) -> HttpResponse:
    values = request.GET.getlist("run")
    ids = [run_id for run_id in map(_id_param, values) if run_id is not None]
    if len(values) != 2 or len(ids) != 2 or ids[0] == ids[1]:
        return render(request, "workbench/eval_compare.html",
                      {"error": gettext("Select exactly two different runs to compare.")},
                      status=400)
    runs = sorted((_run_studied(request, run_id) for run_id in ids),
                  key=lambda run: (run.created_at, run.pk))
    return render(request, "workbench/eval_compare.html",
                  {"comparison": runs_compare(first=runs[0], second=runs[1])})


def _panel(request: PersonRequest, *, import_form: QuestionSetImportForm | None = None,
           launch_form: RunLaunchForm | None = None, status: int = 200) -> HttpResponse:
    caller = request.caller.researching()
    bases = kb_list_visible(caller=caller)
    sets = list(question_sets_visible(caller=caller))
    chosen = None
    set_id = _id_param(request.GET.get("set", ""))
    if set_id is not None:
        chosen = _set_studied(request, set_id)
    runs = runs_visible(caller=caller, set_id=chosen.pk if chosen else None)
    chart_set = chosen or next((run.question_set for run in runs if run.status == "done"), None)
    charts = []
    if chart_set is not None:
        # The history above is already this set's when the set was chosen.
        history = list(reversed(runs if chart_set is chosen else
                                runs_visible(caller=caller, set_id=chart_set.pk)))
        charts = charts_build(runs=history, metrics=METRICS)
    configured = get_config().rag_retrieval
    return render(request, "workbench/evaluation.html", {
        "bases": bases, "sets": sets, "chosen": chosen, "chart_set": chart_set,
        "charts": charts, "rows": [run_row(run) for run in runs], "metrics": METRICS,
        "import_form": import_form or QuestionSetImportForm(
            bases=bases, shipped=shipped_questions(config=get_config())),
        "launch_form": launch_form or RunLaunchForm(
            sets=sets, configured_retrieval=configured,
            initial={"question_set": chosen.pk if chosen else None}),
    }, status=status)


def _set_studied(request: PersonRequest, set_id: int) -> QuestionSet:
    """A set of a base the person researches: NotFound when they cannot read its base,
    Forbidden when they only read it."""
    question_set = question_set_visible(caller=request.caller, set_id=set_id)
    request.caller.research_check(question_set.knowledge_base_id,
                                  what=f"question set {set_id}")
    return question_set


def _run_studied(request: PersonRequest, run_id: int) -> EvalRun:
    """A run of a base the person researches (as `_set_studied`)."""
    run = run_visible(caller=request.caller, run_id=run_id)
    request.caller.research_check(run.knowledge_base_id, what=f"evaluation run {run_id}")
    return run


def _id_param(value: str) -> int | None:
    """A query parameter that names a row by id; None for anything else. ASCII digits only:
    str.isdigit() also accepts "²", which int() refuses."""
    return int(value) if value.isascii() and value.isdigit() else None


urlpatterns = [
    path("evaluation/", panel, name="evaluation"),
    path("evaluation/sets/import", set_import, name="eval-set-import"),
    path("evaluation/sets/<int:set_id>/", set_detail, name="eval-set"),
    path("evaluation/runs/launch", run_start, name="eval-run-launch"),
    path("evaluation/runs/<int:run_id>/", run_detail, name="eval-run"),
    path("evaluation/runs/<int:run_id>/status", run_status, name="eval-run-status"),
    path("evaluation/runs/<int:run_id>/row", run_history_row, name="eval-run-row"),
    path("evaluation/compare/", compare, name="eval-compare"),
]
