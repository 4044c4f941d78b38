"""A run's per-question results: a page of them (GET /evaluation/runs/{id}/results) and the
whole run as a CSV or JSON file (…/export), safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from access.callers import Caller
from answering.modes import MODE_NO_ANSWER, MODE_RAG
from core.errors import Conflict
from evaluation.models import EvalRun
from evaluation.research import run_entry, run_get

EXPORT_FORMATS = ("csv", "json")
CSV_COLUMNS = (
    "id", "question", "expected_mode", "mode", "passed", "confidence", "hit_rank", "hit",
    "complete_hit", "page_hit_rank", "ndcg_at_10", "latency_ms", "refused", "sources",
    "answer_mode", "answer_correct", "prompt_tokens", "completion_tokens", "cost_amount",
    "cost_currency", "answer_error")
# A spreadsheet runs a cell that begins with one of these as a formula (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class ExportFile:
    content: str
    content_type: str
    filename: str


def result_row(row: dict[str, Any]) -> dict[str, Any]:
    """One question's result, in the API's words."""
    in_domain = row.get("expected_mode") == MODE_RAG
    return {
        "id": row["id"], "question": row["question"], "expected_mode": row["expected_mode"],
        "mode": row["mode"], "passed": row["passed"], "confidence": row["confidence"],
        "hit_rank": row.get("hit_rank"),
        # Out-of-domain questions are scored by refusal, never by hit.
        "hit": row.get("hit_rank") is not None if in_domain else None,
        "complete_hit": row.get("complete_hit"), "page_hit_rank": row.get("page_hit_rank"),
        "ndcg_at_10": row.get("ndcg_at_10"), "latency_ms": row.get("latency_ms"),
        "refused": row["mode"] == MODE_NO_ANSWER,
        "sources": row.get("sources") or row.get("top_sources") or [],
        "answer_mode": row.get("answer_mode"), "answer_correct": row.get("answer_correct"),
        "prompt_tokens": row.get("prompt_tokens"),
        "completion_tokens": row.get("completion_tokens"), "cost": row.get("cost"),
        "answer_error": row.get("answer_error")}


def _rows(run: EvalRun) -> list[dict[str, Any]]:
    return [result_row(row) for row in (run.report or {}).get("questions", [])]


def results_page(*, caller: Caller, run_id: int, limit: int, offset: int) -> dict[str, Any]:
    """A page of a run's results, in the set's order; none until the run is done."""
    run = run_get(caller=caller, run_id=run_id, report=True)
    rows = _rows(run)
    return {"run_id": run.pk, "status": run.status, "total": len(rows), "limit": limit,
            "offset": offset, "results": rows[offset:offset + limit]}


def run_export(*, caller: Caller, run_id: int, format: str) -> ExportFile:
    """A finished run as a file: its record and every result."""
    run = run_get(caller=caller, run_id=run_id, report=True)
    if run.status != EvalRun.DONE:
        raise Conflict(f"evaluation run {run_id} is {run.status}: only a finished run is "
                       "exported", details={"id": run_id, "status": run.status})
    rows = _rows(run)
    name = f"evaluation-run-{run.pk}.{format}"
    if format == "json":
        body = {"run": run_entry(run), "results": rows}
        return ExportFile(content=json.dumps(body, cls=DjangoJSONEncoder, ensure_ascii=False,
                                             indent=2),
                          content_type="application/json; charset=utf-8", filename=name)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        cost = row["cost"] or {}
        cells = {**row, "sources": " | ".join(row["sources"]),
                 "cost_amount": cost.get("amount"), "cost_currency": cost.get("currency")}
        writer.writerow([csv_cell(cells.get(column)) for column in CSV_COLUMNS])
    return ExportFile(content=out.getvalue(), content_type="text/csv; charset=utf-8",
                      filename=name)


def csv_cell(value: Any) -> Any:
    """A cell as written: text that a spreadsheet would run as a formula gets a leading quote;
    numbers stay numbers, None an empty cell."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
