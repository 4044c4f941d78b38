"""`rag traces stats [--days N] [--json]` and `rag traces prune [--days N]` — what the traces
of searches and answers say, and dropping the old ones."""

from __future__ import annotations

from core.commands import RagCommand
from core.config import get_config
from traces.recording import traces_prune
from traces.selectors import traces_stats


class Command(RagCommand):
    help = "Trace statistics (p50/p95 per stage, tokens per day), or prune old traces."

    def add_arguments(self, parser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        stats = actions.add_parser("stats", help="p50/p95 milliseconds per stage and operation, "
                                                 "calls and tokens per day")
        stats.add_argument("--days", type=int, default=7, help="the last N days (default 7)")
        stats.add_argument("--json", action="store_true")
        prune = actions.add_parser("prune", help="delete traces older than the retention")
        prune.add_argument("--days", type=int, default=None,
                           help="default: RAG_TRACE_RETENTION_DAYS")

    def handle(self, *args, action: str, **options) -> None:
        if action == "prune":
            days = options["days"] or get_config().rag_trace_retention_days
            self.stdout.write(f"deleted {traces_prune(days=days)} traces older than {days} days")
            return
        report = traces_stats(days=options["days"])
        if options["json"]:
            self.write_json(report)
            return
        self.stdout.write(f"last {report['days']} days")
        self.stdout.write(f"{'operation':<12} {'stage':<16} {'calls':>7} {'p50 ms':>9} "
                          f"{'p95 ms':>9}")
        for row in report["stages"]:
            self.stdout.write(f"{row['operation']:<12} {row['stage']:<16} {row['calls']:>7} "
                              f"{row['p50_ms']:>9.1f} {row['p95_ms']:>9.1f}")
        self.stdout.write(f"\n{'day':<12} {'calls':>7} {'prompt tok':>11} {'completion tok':>15}")
        for row in report["tokens_per_day"]:
            self.stdout.write(f"{row['day']:<12} {row['calls']:>7} {row['prompt_tokens']:>11} "
                              f"{row['completion_tokens']:>15}")
