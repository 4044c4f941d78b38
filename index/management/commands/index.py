"""`rag index status [--json]`, `rag index rebuild [--kb SLUG]`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandParser

from audit.records import AuditEvent, audit_record
from core.commands import RagCommand
from core.config import get_config
from core.errors import InvalidRequest
from core.progress import ProgressBar
from index.maintenance import base_catch_up
from index.status import BaseIndex, index_status


class Command(RagCommand):
    help = ("Show each knowledge base's search index (generation lag, size, chunks, last "
            "build), or rebuild them from PostgreSQL.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "rebuild"])
        parser.add_argument("--kb", help="only this knowledge base (its slug)")
        parser.add_argument("--json", action="store_true", help="print the status as JSON")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        config = get_config()
        bases = index_status(config=config)
        if options["kb"]:
            bases = [base for base in bases if base.slug == options["kb"]]
            if not bases:
                raise InvalidRequest(f"no knowledge base {options['kb']!r} (see `rag kb list`)",
                                     details={"knowledge_base": options["kb"]})
        if action == "status":
            if options["json"]:
                self.write_json([base.as_dict() for base in bases])
                return
            if config.rag_search_index != "on":
                self.stdout.write("RAG_SEARCH_INDEX=off: searches rank in SQL, the indexes "
                                  "below are not read")
            for base in bases:
                self.stdout.write(status_line(base))
            return
        rebuilt: dict[str, int] = {}
        try:
            for base in bases:
                bar = ProgressBar(label=f"{base.slug}", stream=sys.stderr, unit="chunks")
                started = time.perf_counter()
                try:
                    outcome = base_catch_up(knowledge_base_id=base.knowledge_base_id,
                                            config=config, rebuild=True,
                                            progress=_drawing(bar))
                finally:
                    bar.close()
                rebuilt[base.slug] = outcome.generation
                self.stdout.write(f"{base.slug}: rebuilt at generation {outcome.generation} "
                                  f"({base.chunks} chunks, "
                                  f"{time.perf_counter() - started:.1f} s)")
        finally:
            # One action, one entry: the bases rebuilt, also when a later one failed.
            audit_record(AuditEvent(
                action="index.rebuild", object_type="search_index",
                object_name=options["kb"] or "all knowledge bases",
                changes={"generations": rebuilt,
                         "failed": len(rebuilt) < len(bases)}))


def _drawing(bar: ProgressBar) -> Callable[[str, int, int], None]:
    """Both parts' progress as one bar: the chunks read by each, over their sum."""
    parts: dict[str, tuple[int, int]] = {}

    def draw(part: str, done: int, total: int) -> None:
        parts[part] = (done, total)
        bar.update(sum(done for done, _ in parts.values()),
                   sum(total for _, total in parts.values()))

    return draw


def status_line(base: BaseIndex) -> str:
    """`default  ok  generation 12 (lag 0)  4,210 chunks in 31 documents  2.1 MB  built ...`"""
    built = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(base.built_at))
             if base.built_at else "never")
    lag = "-" if base.lag is None else str(base.lag)
    took = f" (full build {base.build_seconds:.1f} s)" if base.build_seconds is not None else ""
    return (f"{base.slug}  {base.state}  generation {base.generation} (lag {lag})  "
            f"{base.indexed:,} of {base.chunks:,} chunks indexed, {base.documents:,} documents  "
            f"{base.bytes / 1e6:.1f} MB  built {built}{took}")
