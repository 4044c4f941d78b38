"""`rag conversations eval FILE [--split dev|test|all] [--kb SLUG …] [--json]` — hit@1 of
follow-up questions searched as asked and as the conversation makes them;
`rag conversations prune [--days N]` — drop conversations inactive past the retention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from access.callers import OPERATOR
from conversations.services import conversations_prune
from core.commands import RagCommand
from core.config import get_config
from evaluation.follow_ups import SPLITS, conversations_eval, conversations_eval_load


class Command(RagCommand):
    help = "Evaluate follow-up understanding on a conversations file, or prune old conversations."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        evaluate = actions.add_parser("eval", help="hit@1 of follow-ups with and without the "
                                                   "conversation (eval/conversations.yaml)")
        evaluate.add_argument("file", help="a conversations evaluation file")
        evaluate.add_argument("--split", choices=SPLITS, default="all",
                              help="dev: odd conversations, test: even ones (default all)")
        evaluate.add_argument("--kb", action="append", default=None, metavar="SLUG")
        evaluate.add_argument("--json", action="store_true")
        evaluate.add_argument("--turns", action="store_true",
                              help="also print every follow-up with both queries")
        prune = actions.add_parser("prune", help="delete conversations inactive for longer "
                                                 "than the retention")
        prune.add_argument("--days", type=int, default=None,
                           help="default: RAG_CONVERSATION_RETENTION_DAYS")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        config = get_config()
        if action == "prune":
            days = options["days"] or config.rag_conversation_retention_days
            self.stdout.write(f"deleted {conversations_prune(days=days)} conversations inactive "
                              f"for more than {days} days")
            return
        report = conversations_eval(conversations=conversations_eval_load(Path(options["file"])),
                                    config=config, scope=OPERATOR.scope(slugs=options["kb"]),
                                    split=options["split"])
        if options["json"]:
            self.write_json(report)
            return
        self.stdout.write("follow-up turns; hit@1: top result from an expected note and section; "
                          "doc: from an expected note")
        self.stdout.write(f"{'split':<6} {'lang':<6} {'turns':>6} {'condensed':>10} "
                          f"{'hit@1 as asked':>15} {'condensed':>10} {'doc as asked':>13} "
                          f"{'condensed':>10}")
        for line in report["summary"]:
            self.stdout.write(f"{line['split']:<6} {line['lang']:<6} {line['follow_ups']:>6} "
                              f"{line['condensed']:>10} {line['hit_at_1_as_asked']:>15.3f} "
                              f"{line['hit_at_1_condensed']:>10.3f} "
                              f"{line['doc_hit_at_1_as_asked']:>13.3f} "
                              f"{line['doc_hit_at_1_condensed']:>10.3f}")
        if options["turns"]:
            for row in report["turns"]:
                if row["follow_up"]:
                    mark = ("+" if row["hit_condensed"] else "-") + (
                        "+" if row["hit_as_asked"] else "-")
                    self.stdout.write(f"{mark} {row['conversation']}.{row['turn']} "
                                      f"{row['question']} → {row['standalone_query']} "
                                      f"[{row['condensation']}] ⇒ {row['top_condensed']}")
