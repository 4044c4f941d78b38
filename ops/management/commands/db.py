"""`rag db init` — apply every app's migrations (knowledge/db_schema.py), then re-analyse the
chunks whose lexical terms an older analyzer made.
`rag db index [--concurrently | --drop [--all] | --status] [--sample N]` — the HNSW index of the
current embedding config's vectors (index/vector_index.py) and its recall@10 on them
(index/vector_recall.py), measured after every build, by a `rag db index` that finds none
stored or a stale one, and by every --status."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser, OutputWrapper

from core.commands import RagCommand
from core.config import Config, get_config
from core.errors import InvalidRequest
from index.vector_index import (
    BuildProgress,
    vector_index_build,
    vector_index_builds_running,
    vector_index_drop,
    vector_index_status,
)
from index.vector_path import vector_path_plan
from index.vector_recall import (
    RECALL_SAMPLE,
    K,
    RecallStep,
    VectorIndexTuning,
    recall_text,
    vector_index_tune,
    vector_index_tuning_current,
)
from knowledge.db_schema import index_connection
from knowledge.ingest_fill import LEXICAL_FILL_BATCH
from knowledge.store import chunks_lexical_refresh
from ops.db_init import db_init


class Command(RagCommand):
    help = ("Initialise the database: every app's migrations (idempotent); or "
            "build, drop or describe the HNSW index of the current embedding config.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["init", "index"])
        parser.add_argument("--concurrently", action="store_true",
                            help="index: build without blocking ingest (slower)")
        parser.add_argument("--drop", action="store_true", help="index: remove it")
        parser.add_argument("--all", action="store_true",
                            help="index --drop: remove the indexes of every provider/model")
        parser.add_argument("--status", action="store_true",
                            help="index: say whether it exists, its size and parameters, and "
                                 "measure its recall@10 again (stored, as after a build)")
        parser.add_argument("--json", action="store_true", help="index --status: as JSON")
        parser.add_argument("--sample", type=int, default=RECALL_SAMPLE, metavar="N",
                            help="index: queries of each kind (stored vectors, and blends of "
                                 "two) to measure recall@10 with (default "
                                 f"{RECALL_SAMPLE}; each costs one pass over the vectors' "
                                 "distances)")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "init":
            db_init(verbosity=max(0, options["verbosity"] - 1))
            refreshed = chunks_lexical_refresh(vault_path=None, batch=LEXICAL_FILL_BATCH)
            self.stdout.write("schema ready (every app's migrations applied, up to date)"
                              + (f"; {refreshed} chunks re-analysed for the lexical channel "
                                 "(vectors kept)" if refreshed else ""))
            return
        if options["drop"] and options["status"]:
            raise InvalidRequest("`rag db index` takes --drop or --status, not both")
        if not 1 <= options["sample"] <= 10_000:
            raise InvalidRequest("--sample must be between 1 and 10000")
        config = get_config()
        if options["status"]:
            self._status(config, as_json=options["json"], sample=options["sample"])
        elif options["drop"]:
            dropped = vector_index_drop(config=config, every=options["all"])
            self.stdout.write(f"dropped {', '.join(dropped)}" if dropped
                              else "no HNSW index to drop")
        else:
            line = ProgressLine(self.stderr)
            try:
                build = vector_index_build(config=config, concurrently=options["concurrently"],
                                           progress=line.update)
            finally:
                line.close()
            if build.action == "unchanged":
                self.stdout.write(f"{build.name} is up to date (m={config.hnsw_m}, "
                                  f"ef_construction={config.hnsw_ef_construction}, "
                                  f"{build.key.describe()}); nothing to do")
            else:
                self.stdout.write(
                    f"{build.name} {build.action}: {build.vectors} vectors of "
                    f"{config.embedding_provider}/{config.embedding_model}, m={config.hnsw_m}, "
                    f"ef_construction={config.hnsw_ef_construction}, {build.key.describe()}, "
                    f"{build.seconds:.1f}s "
                    f"(maintenance_work_mem {build.maintenance_work_mem_mb} MB)")
            kept = (vector_index_tuning_current(index_name=build.name)
                    if build.action == "unchanged" else None)
            if kept is None:
                self._measure(config, sample=options["sample"])
            else:
                self.stdout.write(self._measured(config, kept)
                                  + "; `rag db index --status` measures again")

    def _measure(self, config: Config, *, sample: int) -> VectorIndexTuning | None:
        """Tune ef_search on the stored vectors, each step on stderr, the outcome on stdout."""
        self.stderr.write(f"measuring recall@{K} against the exact scan on up to {sample} "
                          f"stored vectors and {sample} blends of two (the lower counts; "
                          f"target {config.rag_hnsw_target_recall:g})", style_func=str)

        def step(measured: RecallStep) -> None:
            self.stderr.write(f"  ef_search {measured.ef_search}: recall@{K} "
                              f"{recall_text(measured.recall)}", style_func=str)

        tuning = vector_index_tune(config=config, sample=sample, progress=step)
        self.stdout.write("no vector to measure recall with" if tuning is None
                          else self._measured(config, tuning) + "; stored")
        return tuning

    @staticmethod
    def _measured(config: Config, tuning: VectorIndexTuning) -> str:
        chosen = tuning.chosen(target=config.rag_hnsw_target_recall)
        met = chosen.recall >= config.rag_hnsw_target_recall
        return (f"recall@{K} {recall_text(chosen.recall)} at ef_search {chosen.ef_search} (target "
                f"{config.rag_hnsw_target_recall:g}: {'met' if met else 'NOT met'}), "
                f"{tuning.sample_size} + {tuning.sample_size} queries over {tuning.vectors} "
                f"vectors, "
                f"{tuning.seconds:.1f}s, measured {tuning.measured_at:%Y-%m-%d %H:%M}")

    def _status(self, config: Config, *, as_json: bool, sample: int) -> None:
        indexes = vector_index_status(config=config)
        running = vector_index_builds_running()
        measurable = any(index.current and index.valid for index in indexes)
        if not as_json:
            self._print_indexes(config, indexes)
            for build in running:
                self.stdout.write(f"a build is running: {build.phase} {build.done}/{build.total}")
        tuning = None
        if measurable:
            tuning = (vector_index_tune(config=config, sample=sample) if as_json
                      else self._measure(config, sample=sample))
        plan = vector_path_plan(conn=index_connection(), config=config,
                                provider=config.embedding_provider,
                                model=config.embedding_model)
        if as_json:
            self.write_json({
                "indexes": [{"name": i.name, "current": i.current, "valid": i.valid,
                             "size_bytes": i.size_bytes, "m": i.m,
                             "ef_construction": i.ef_construction, "vectors": i.vectors,
                             "key": i.key.describe() if i.key else None,
                             "predicate": i.predicate} for i in indexes],
                "builds_running": [{"phase": b.phase, "done": b.done, "total": b.total}
                                   for b in running],
                "recall": None if tuning is None else {
                    "steps": [{"ef_search": s.ef_search, f"recall_at_{K}": s.recall}
                              for s in tuning.steps],
                    "target_recall": tuning.target_recall, "sample_size": tuning.sample_size,
                    "vectors": tuning.vectors, "seconds": round(tuning.seconds, 3),
                    "measured_at": tuning.measured_at.isoformat()},
                "vector_search": plan.details(),
                "vector_index_setting": config.rag_vector_index})
            return
        path = (f"HNSW at ef_search {plan.ef_search}" if plan.path == "hnsw"
                else "the exact scan" if plan.path == "exact" else "nothing (no index)")
        self.stdout.write(f"RAG_VECTOR_INDEX={config.rag_vector_index}: searches use {path}; "
                          f"{plan.reason}")

    def _print_indexes(self, config: Config, indexes: list) -> None:
        if not any(index.current for index in indexes):
            self.stdout.write(f"no HNSW index for {config.embedding_provider}/"
                              f"{config.embedding_model}; build it with `rag db index`")
        for i in indexes:
            state = "" if i.valid else " INVALID (interrupted build; run `rag db index` again)"
            key = i.key.describe() if i.key else "a key `rag db index` does not build"
            self.stdout.write(
                f"{'* ' if i.current else '  '}{i.name}: {i.size_bytes / 1048576:.1f} MiB, "
                f"~{i.vectors} vectors, m={i.m}, ef_construction={i.ef_construction}, {key}, "
                f"WHERE {i.predicate}{state}")


class ProgressLine:
    """pg_stat_progress_create_index readings: one line redrawn on a terminal; in a log, a line
    per phase rather than one every half second. Uncoloured: stderr's style is for errors."""

    def __init__(self, stream: OutputWrapper) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.phase: str | None = None

    def update(self, progress: BuildProgress) -> None:
        share = f" {progress.done}/{progress.total}" if progress.total else ""
        if self.tty:
            self.stream.write(f"\r{progress.phase}{share}\033[K", style_func=str, ending="")
        elif progress.phase != self.phase:
            self.stream.write(f"{progress.phase}{share}", style_func=str)
        self.stream.flush()
        self.phase = progress.phase

    def close(self) -> None:
        if self.tty and self.phase is not None:
            self.stream.write("", style_func=str)
            self.stream.flush()
