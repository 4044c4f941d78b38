"""`rag traces stats [--days N | --since DATE] [--json]`, `rag traces prune [--days N]` and
`rag traces show ID [--replay] [--json]` — what the traces of searches and answers say, dropping
the old ones, and one trace with its answer's context rebuilt.

The command lives in answering, not in traces: `show --replay` rebuilds a context, which only
answering knows how to do, and traces may not import it (tests/test_architecture.py).
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from typing import Any

from django.core.management.base import CommandParser

from answering.replay import trace_report
from answering.usage import costs_shown, usage_report, usage_since
from core.commands import RagCommand
from core.config import get_config
from core.errors import EXIT_FAILURE
from core.output import page_span_label
from traces.recording import traces_prune


class Command(RagCommand):
    help = ("Trace statistics (p50/p95 per stage, tokens per day), prune old traces, or show "
            "one trace and replay its answer's context.")

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        stats = actions.add_parser("stats", help="p50/p95 milliseconds per stage and operation; "
                                                 "calls, tokens and cost per day, knowledge "
                                                 "base and model")
        stats.add_argument("--days", type=int, default=7, help="the last N days (default 7)")
        stats.add_argument("--since", type=_date, default=None, metavar="DATE",
                           help="instead of --days: from this day on (YYYY-MM-DD, UTC)")
        stats.add_argument("--json", action="store_true")
        prune = actions.add_parser("prune", help="delete traces older than the retention")
        prune.add_argument("--days", type=int, default=None,
                           help="default: RAG_TRACE_RETENTION_DAYS")
        show = actions.add_parser("show", help="everything one trace recorded")
        show.add_argument("trace_id", metavar="ID",
                          help="the trace id (a response's trace_id or X-Request-ID)")
        show.add_argument("--replay", action="store_true",
                          help="rebuild the answer's context from the recorded chunks and say "
                               f"what changed since (exit {EXIT_FAILURE} when anything did)")
        show.add_argument("--json", action="store_true")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "prune":
            days = options["days"] or get_config().rag_trace_retention_days
            self.stdout.write(f"deleted {traces_prune(days=days)} traces older than {days} days")
            return
        if action == "show":
            self._show(options["trace_id"], replay=options["replay"], as_json=options["json"])
            return
        report = usage_report(since=usage_since(days=options["days"], since=options["since"]))
        if options["json"]:
            self.write_json({"days": None if options["since"] else options["days"], **report})
            return
        self.stdout.write(f"since {report['since']}" if options["since"]
                          else f"last {options['days']} days")
        self.stdout.write(f"{'operation':<12} {'stage':<16} {'calls':>7} {'p50 ms':>9} "
                          f"{'p95 ms':>9}")
        for row in report["stages"]:
            self.stdout.write(f"{row['operation']:<12} {row['stage']:<16} {row['calls']:>7} "
                              f"{row['p50_ms']:>9.1f} {row['p95_ms']:>9.1f}")
        for title, key, rows in (("day", "day", report["tokens_per_day"]),
                                 ("knowledge base", "knowledge_base",
                                  report["tokens_per_knowledge_base"]),
                                 ("model", "model", report["tokens_per_model"])):
            self._totals_write(title, key, rows)

    def _totals_write(self, title: str, key: str, rows: list[dict[str, Any]]) -> None:
        self.stdout.write(f"\n{title:<32} {'calls':>7} {'prompt tok':>11} "
                          f"{'completion tok':>15}  cost")
        for row in rows:
            unpriced = f" ({row['unpriced_calls']} calls unpriced)" if row["unpriced_calls"] else ""
            self.stdout.write(f"{row[key]:<32} {row['calls']:>7} {row['prompt_tokens']:>11} "
                              f"{row['completion_tokens']:>15}  {costs_shown(row['costs'])}"
                              f"{unpriced}")

    def _show(self, trace_id: str, *, replay: bool, as_json: bool) -> None:
        report = trace_report(trace_id=trace_id, replay=replay)
        if as_json:
            self.write_json(report)
        else:
            self._trace_write(report["trace"])
            if replay:
                self._replay_write(report["replay"])
        replayed = report.get("replay")
        if replayed is not None and replayed["replayable"] and not replayed["unchanged"]:
            raise SystemExit(EXIT_FAILURE)

    def _trace_write(self, trace: dict[str, Any]) -> None:
        write = self.stdout.write
        error = f" ({trace['error_code']})" if trace["error_code"] else ""
        write(f"trace {trace['id']} at {trace['created_at']}")
        write(f"operation: {trace['operation']} on channel {trace['channel']}, "
              f"status {trace['status']}{error}")
        write(f"caller: {trace['caller'] or '-'}")
        write(f"knowledge bases: {', '.join(trace['knowledge_bases']) or '-'}")
        write(f"mode: {trace['mode'] or '-'}")
        write(f"parameters: {_pairs(trace['parameters'])}")
        write(f"timings ms: {_pairs(trace['timings_ms'])}")
        write(f"models: embedding {trace['embedding_model'] or '-'}, "
              f"llm {trace['llm_model'] or '-'}")
        write(f"tokens: prompt {_or_dash(trace['prompt_tokens'])}, completion "
              f"{_or_dash(trace['completion_tokens'])} ({trace['token_source'] or '-'})")
        cost = trace["cost"]
        write(f"cost: {'-' if cost is None else costs_shown([cost])}")
        write(f"prompt version: {trace['prompt_version'] or '-'}")
        write(f"citations: {len(trace['citations']) or '-'}")
        for number, entry in enumerate(trace["citations"], start=1):
            chunks = entry.get("chunks") or [entry]
            listed = ", ".join(f"{chunk.get('chunk_id')} ({str(chunk.get('content_hash'))[:12]})"
                               for chunk in chunks)
            score = f" score {entry['score']:.4f}" if "score" in entry else ""
            cut = " truncated" if entry.get("truncated") else ""
            quoted = (f"; quote in chunk {entry['quote_chunk_id']}"
                      if entry.get("quote_chunk_id") is not None else "")
            write(f"  [{number}] {entry.get('source', '?')}{score}{cut}: chunks {listed}{quoted}")
        for name in ("question", "answer"):
            if trace[name] is not None:
                write(f"{name}:\n{trace[name]}")

    def _replay_write(self, replay: dict[str, Any]) -> None:
        write = self.stdout.write
        if not replay["replayable"]:
            write(f"\nnothing to replay: {replay['reason']}")
            return
        if replay["reason"]:
            write(f"\nnote: {replay['reason']}")
        write("\ncontext rebuilt from the recorded chunks:")
        write(replay["text"])
        counts = {status: sum(block["status"] == status for block in replay["blocks"])
                  for status in ("unchanged", "changed", "deleted")}
        write(f"\nreplay: {len(replay['blocks'])} blocks, " + ", ".join(
            f"{count} {status}" for status, count in counts.items()))
        if replay["prompt_version"] != replay["prompt_version_now"]:
            write(f"prompt version {replay['prompt_version']} then, "
                  f"{replay['prompt_version_now']} now: the prompt is not the same")
        for block in replay["blocks"]:
            changes = f": {'; '.join(block['changes'])}" if block["changes"] else ""
            write(f"  [{block['number']}] {block['status']:<9} {block['source']}{changes}")
            citation = block.get("citation") or {}
            if citation.get("quote") is not None:
                place = " › ".join(citation["heading_path"]) or "-"
                pages = page_span_label(page_start=citation["page_start"],
                                        page_end=citation["page_end"])
                write(f"      quote (chunk {citation['quote_chunk_index']}, {place}"
                      f"{', ' + pages if pages else ''}): {citation['quote']}")


def _pairs(values: dict[str, Any]) -> str:
    return ", ".join(
        f"{name}={value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
        for name, value in values.items()) or "-"


def _or_dash(value: Any) -> str:
    return "-" if value is None else str(value)


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None
