"""What the evaluation panel shows of runs: their metrics, two runs side by side, and charts
of one set's runs as inline SVG computed here (no script, no chart library)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise

from evaluation.models import EvalRun
from evaluation.runs import RunProgress


@dataclass(frozen=True)
class Metric:
    key: str  # the field of the run's summary (evaluation/questions.py)
    label: StrOrPromise  # in the interface language
    unit: str  # "ratio" (0..1) or "ms"
    higher_is_better: bool = True


METRICS = (
    Metric("hit_at_1", "Hit@1", "ratio"),
    Metric("hit_at_5", "Hit@5", "ratio"),
    Metric("mrr", "MRR", "ratio"),
    Metric("ndcg_at_10", "nDCG@10", "ratio"),
    Metric("no_answer_precision", _("Refusal precision"), "ratio"),
    Metric("no_answer_recall", _("Refusal recall"), "ratio"),
    Metric("mode_accuracy", _("Mode accuracy"), "ratio"),
    Metric("latency_p50_ms", _("Latency p50 (ms)"), "ms", higher_is_better=False),
    Metric("latency_p95_ms", _("Latency p95 (ms)"), "ms", higher_is_better=False),
)
# A run's own page and two runs compared show these too (the history's table and charts keep
# to METRICS, which fit a laptop's width).
RUN_METRICS = (
    *METRICS[:4],
    # Every expected source within the run's top k (a question with one source: its hit@k).
    Metric("complete_hit_at_k", "CompleteHit@k", "ratio"),
    # Runs that answered (the API's `answers: true`): answers holding every answer_contains.
    Metric("answer_correct", _("Answer correctness"), "ratio"),
    *METRICS[4:],
)
# Distinguishable on white and for the common colour-vision deficiencies (Okabe–Ito, darkened).
COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#8a6d00", "#56b4e9", "#000000")


def metric_text(metric: Metric, value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}" if metric.unit == "ms" else f"{value:.3f}"


@dataclass(frozen=True)
class MetricCell:
    metric: Metric
    text: str


@dataclass(frozen=True)
class RunRow:
    """One run in the history table: its metrics as shown, and its progress while unfinished."""

    run: EvalRun
    cells: list[MetricCell]
    progress: RunProgress | None

    @property
    def unfinished(self) -> bool:
        return self.run.status in (EvalRun.QUEUED, EvalRun.RUNNING)


def run_row(run: EvalRun, *, metrics: tuple[Metric, ...] = METRICS) -> RunRow:
    """A history row of a run as `runs_visible`/`run_visible` settled it."""
    cells = [MetricCell(metric, metric_text(metric, run.summary.get(metric.key)))
             for metric in metrics]
    return RunRow(run=run, cells=cells, progress=run.progress)


@dataclass(frozen=True)
class MetricDelta:
    metric: Metric
    first: str
    second: str
    difference: str
    verdict: str  # better, worse, same, or "" when a side has no value


@dataclass(frozen=True)
class QuestionDelta:
    id: str
    question: str
    first: dict[str, Any] | None
    second: dict[str, Any] | None
    change: str


@dataclass(frozen=True)
class Comparison:
    first: EvalRun
    second: EvalRun
    metrics: list[MetricDelta]
    questions: list[QuestionDelta]
    unchanged: int


def runs_compare(*, first: EvalRun, second: EvalRun) -> Comparison:
    """Two runs side by side, `second` against `first`: every metric with the difference, and
    the questions whose hit rank or pass/fail changed (or that only one run has)."""
    metrics = [_metric_delta(metric, first.summary.get(metric.key),
                             second.summary.get(metric.key)) for metric in RUN_METRICS]
    before = {row["id"]: row for row in first.report.get("questions", [])}
    after = {row["id"]: row for row in second.report.get("questions", [])}
    questions, unchanged = [], 0
    for question_id in [*before, *(key for key in after if key not in before)]:
        change = _question_change(before.get(question_id), after.get(question_id))
        if not change:
            unchanged += 1
            continue
        row = before.get(question_id) or after[question_id]
        questions.append(QuestionDelta(id=question_id, question=row["question"],
                                       first=before.get(question_id),
                                       second=after.get(question_id), change=change))
    return Comparison(first=first, second=second, metrics=metrics, questions=questions,
                      unchanged=unchanged)


def _metric_delta(metric: Metric, first: float | None, second: float | None) -> MetricDelta:
    if first is None or second is None:
        return MetricDelta(metric, metric_text(metric, first), metric_text(metric, second),
                           "–", "")
    difference = second - first
    # Differences below the rounding of the stored ratios (4 digits) are no change.
    if abs(difference) < (0.05 if metric.unit == "ms" else 0.00005):
        verdict = "same"
    else:
        verdict = "better" if (difference > 0) == metric.higher_is_better else "worse"
    sign = "+" if difference > 0 else ""
    return MetricDelta(metric, metric_text(metric, first), metric_text(metric, second),
                       sign + metric_text(metric, difference), verdict)


def _question_change(first: dict | None, second: dict | None) -> str:
    if first is None:
        return gettext("only in the second run")
    if second is None:
        return gettext("only in the first run")
    changes = []
    if first["passed"] != second["passed"]:
        changes.append(gettext("now passes") if second["passed"] else gettext("now fails"))
    if first["hit_rank"] != second["hit_rank"]:
        changes.append(gettext("hit rank %(first)s → %(second)s")
                       % {"first": _rank(first["hit_rank"]), "second": _rank(second["hit_rank"])})
    return "; ".join(changes)


def _rank(rank: int | None) -> str:
    return gettext("none") if rank is None else str(rank)


# --- the charts ------------------------------------------------------------------------------
# One small chart per metric (small multiples): metrics near the same value never hide each
# other, a single run is one labelled point, and the panels wrap onto narrow screens.

WIDTH, LEFT, RIGHT, TOP, PLOT_HEIGHT = 320, 48, 12, 10, 110
INSET = 12  # between the y axis (and the right edge) and the first (last) run's points
X_LABELS = 6  # at most this many run labels under the x axis


@dataclass(frozen=True)
class ChartPoint:
    x: float
    y: float
    run_id: int
    title: str


@dataclass(frozen=True)
class ChartLine:
    metric: Metric
    color: str
    points: list[ChartPoint]

    @property
    def polyline(self) -> str:
        return " ".join(f"{point.x:.1f},{point.y:.1f}" for point in self.points)


@dataclass(frozen=True)
class Chart:
    """One metric over a set's finished runs; `latest` is its newest run's value as shown."""

    metric: Metric
    latest: str
    latest_run: int
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str]]
    line: ChartLine

    @property
    def y_label_x(self) -> int:
        return self.left - 6

    @property
    def x_label_y(self) -> int:
        return self.bottom + 16


def charts_build(*, runs: list[EvalRun], metrics: tuple[Metric, ...]) -> list[Chart]:
    """A chart per metric of `metrics` that a finished run of `runs` (oldest first) has."""
    runs = [run for run in runs if run.status == EvalRun.DONE]
    charts = [chart_build(runs=runs, metric=metric, color=COLORS[number % len(COLORS)])
              for number, metric in enumerate(metrics)]
    return [chart for chart in charts if chart is not None]


def chart_build(*, runs: list[EvalRun], metric: Metric, color: str) -> Chart | None:
    """`metric` over finished `runs` (oldest first): a point per run with a value joined by a
    line; ratios on a 0–1 axis, milliseconds from 0 to a round top. None without a value."""
    valued = [(index, run, value) for index, run in enumerate(runs)
              if (value := run.summary.get(metric.key)) is not None]
    if not valued:
        return None
    ratio = metric.unit == "ratio"
    top_value = 1.0 if ratio else _round_up(max(value for _, _, value in valued))
    right, bottom = WIDTH - RIGHT, TOP + PLOT_HEIGHT
    span = right - LEFT - 2 * INSET

    def x_of(index: int) -> float:
        return LEFT + INSET + (span / 2 if len(runs) == 1 else index * span / (len(runs) - 1))

    def y_of(value: float) -> float:
        return bottom - min(value, top_value) / top_value * PLOT_HEIGHT

    points = [ChartPoint(x=x_of(index), y=y_of(value), run_id=run.pk,
                         title=gettext("run #%(id)s") % {"id": run.pk}
                         + f" · {run.created_at:%Y-%m-%d %H:%M} · "
                           f"{metric.label} {metric_text(metric, value)}")
              for index, run, value in valued]
    step = math.ceil(len(runs) / X_LABELS)
    x_ticks = [(x_of(index), f"#{run.pk}") for index, run in enumerate(runs)
               if index % step == 0 or index == len(runs) - 1]
    y_ticks = [(y_of(top_value * share), _tick(top_value * share, ratio=ratio))
               for share in (0, 0.5, 1)]
    _, last_run, last_value = valued[-1]
    return Chart(metric=metric, latest=metric_text(metric, last_value), latest_run=last_run.pk,
                 width=WIDTH, height=bottom + 24, left=LEFT, right=right, top=TOP,
                 bottom=bottom, y_ticks=y_ticks, x_ticks=x_ticks,
                 line=ChartLine(metric=metric, color=color, points=points))


def _round_up(value: float) -> float:
    """A round axis top at or above `value`: 1, 2 or 5 times a power of ten."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(factor * power for factor in (1, 2, 5, 10) if factor * power >= value)


def _tick(value: float, *, ratio: bool) -> str:
    return f"{value:g}" if ratio else f"{value:g} ms"
