"""Row questions over tables: does retrieval find the chunk that holds the asked row?

The vault and questions come from tools/wtq_to_notes.py (WikiTableQuestions: Wikipedia tables
as notes, the human questions that look up one row, a `dev` and a held-out `test` split):

    .venv/bin/python tools/wtq_to_notes.py /data/WikiTableQuestions .local/tables/wtq \\
        --tables 200 --seed 13
    .venv/bin/python bench/tables.py .local/tables/wtq --split dev --table-target 100 200 400
    .venv/bin/python bench/tables.py .local/tables/wtq --split test

For each `--table-target` (parsing/tables.py TABLE_TARGET_TOKENS, set for this process only; the
notes are prepared in it, prepare_workers 0) or once with the shipped chunking, the vault is
copied to a folder of its own and ingested into a throw-away base (`--kb`, `tables-bench`;
removed afterwards), so no earlier run's chunks are reused. Every question of the split is then
searched in each `--modes` retrieval mode as /search runs it (`--top-k` results, 10 by default,
its base only), and scored twice:

- document level: the question's note among the results (each document at its best chunk):
  hit@1, hit@5 and MRR over the distinct documents in rank order;
- row level: a result chunk holds the answer's row whole (the line `questions.jsonl` names),
  so a chunk of the wrong rows of the right table does not count: hit@1, hit@5 and MRR over
  the chunks in rank order.

Also the answer rate (these questions are all answerable: mode rag under RAG_REFUSAL, decided
as /ask decides on the same results), the chunks the vault made and the ingest's seconds. One
JSON line per target and mode. Run it on a database without a base of that name (`rag pg
start`, `rag db init`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _setup import ROOT, django_setup

RUNS_FOLDER = ROOT / ".local" / "tables-bench"


def questions_read(folder: Path, split: str) -> list[dict[str, str]]:
    with (folder / "questions.jsonl").open(encoding="utf-8") as lines:
        return [question for question in map(json.loads, lines) if question["split"] == split]


def ranks(*, question: dict[str, str], results: list[Any]) -> tuple[int | None, int | None]:
    """(document rank, row rank) of the question among the results, 1-based; None: absent."""
    documents = list(dict.fromkeys(hit.relative_path for hit in results))
    document = (documents.index(question["relative_path"]) + 1
                if question["relative_path"] in documents else None)
    row = next((rank for rank, hit in enumerate(results, start=1)
                if hit.relative_path == question["relative_path"]
                and question["row"] in hit.content.split("\n")), None)
    return document, row


def scores(found: list[int | None]) -> dict[str, float]:
    count = len(found) or 1
    return {"hit_at_1": round(sum(rank == 1 for rank in found) / count, 4),
            "hit_at_5": round(sum(rank is not None and rank <= 5 for rank in found) / count, 4),
            "mrr": round(sum(1 / rank for rank in found if rank is not None) / count, 4)}


def vault_ingest_fresh(*, source: Path, slug: str,
                       config: Any) -> tuple[int, Path, int, float]:
    """Copy the vault to a new folder and ingest it into a new base `slug`: (base id, folder,
    chunks written, seconds)."""
    from knowledge.bases import kb_create
    from knowledge.ingest import IngestRequest, vault_ingest

    folder = RUNS_FOLDER / f"run-{time.time_ns()}"
    shutil.copytree(source / "vault", folder)
    base = kb_create(slug=slug, name="Table questions (bench/tables.py)", sources=[str(folder)])
    started = time.perf_counter()
    result = vault_ingest(IngestRequest(vault_path=folder, knowledge_base=slug,
                                        prepare_workers=0), config=config)
    return base.id, folder, result.chunks_written, time.perf_counter() - started


def base_remove(*, slug: str, folder: Path) -> None:
    from knowledge.bases import kb_delete
    from knowledge.vault_index import vault_forget

    vault_forget(vault_path=folder)
    kb_delete(slug=slug)
    shutil.rmtree(folder, ignore_errors=True)


def mode_measure(*, questions: list[dict[str, str]], base_id: int, mode: str,
                 config: Any) -> dict[str, Any]:
    """Every question searched in `mode`: the scores, the answer rate and the latency."""
    from access.callers import Scope
    from answering.modes import MODE_RAG, mode_for
    from answering.refusal import refusal_decide
    from retrieval.services import search
    from retrieval.signals import signals_measure
    from retrieval.types import RetrievalRequest

    documents, rows, answered, seconds = [], [], 0, []
    for question in questions:
        started = time.perf_counter()
        outcome = search(RetrievalRequest(query=question["question"], scope=Scope.of([base_id]),
                                          top_k=config.rag_top_k, mode=mode), config=config)
        seconds.append(time.perf_counter() - started)
        document, row = ranks(question=question, results=outcome.results)
        documents.append(document)
        rows.append(row)
        signals = signals_measure(query=question["question"], hits=outcome.results,
                                  confidence=outcome.confidence)
        decided = refusal_decide(signals=signals, config=config)
        answered += mode_for(grounded=decided.grounded, fallback_requested=False,
                             fallback_enabled=False,
                             has_sources=bool(outcome.results)) == MODE_RAG
    return {"mode": mode, "document": scores(documents), "row": scores(rows),
            "answer_rate": round(answered / (len(questions) or 1), 4),
            "search_p50_ms": round(statistics.median(seconds) * 1000, 1) if seconds else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="what tools/wtq_to_notes.py wrote")
    parser.add_argument("--split", choices=("dev", "test"), default="test")
    parser.add_argument("--table-target", type=int, nargs="*", default=[],
                        help="TABLE_TARGET_TOKENS values to measure (none: as shipped)")
    parser.add_argument("--modes", nargs="+", default=["hybrid"],
                        choices=("hybrid", "lexical", "vector"))
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--kb", default="tables-bench", help="the throw-away base's slug")
    args = parser.parse_args()
    django_setup()
    import dataclasses

    from core.config import get_config

    config = dataclasses.replace(get_config(), rag_top_k=args.top_k)
    questions = questions_read(args.folder, args.split)
    if not questions:
        sys.exit(f"no {args.split} questions in {args.folder / 'questions.jsonl'}")
    for target in args.table_target or [None]:
        if target is not None:
            from parsing import tables

            tables.TABLE_TARGET_TOKENS = target
        base_id, folder, chunks, seconds = vault_ingest_fresh(source=args.folder, slug=args.kb,
                                                              config=config)
        try:
            for mode in args.modes:
                print(json.dumps({"split": args.split, "questions": len(questions),
                                  "table_target": target, "chunks": chunks,
                                  "ingest_s": round(seconds, 1),
                                  **mode_measure(questions=questions, base_id=base_id,
                                                 mode=mode, config=config)}), flush=True)
        finally:
            base_remove(slug=args.kb, folder=folder)


if __name__ == "__main__":
    main()
