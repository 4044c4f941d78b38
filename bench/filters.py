"""Filtered against unfiltered search at a team's scale: 25,000 notes of four sections (~100k
chunks, the corpus of bench/scale.py) with frontmatter a geology team would filter on.

Each note gets `year` (2015-2024), `region` (one of eight), `mineral` (a list), tags, and a
folder (one of 50); the default pipeline (hybrid + features rerank) then runs the same queries
unfiltered and under filters admitting from ~1% to ~50% of the documents, in process (the
filter step, both channels, fusion and rerank; no HTTP), and prints one JSON line per filter:
p50/p95, the documents and chunks admitted, and how many results came back (top_k 10).
Runs against DATABASE_URL (`rag pg start && rag db init`).

    .venv/bin/python bench/filters.py --vault .local/filters --keep    # then --reuse
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from _setup import django_setup, vacuum
from lexical import vocabulary
from scale import SEED, ingest, percentiles, queries_make, vault_remove, vault_write

from retrieval.types import RetrievalRequest

REGIONS = ("Yunnan", "Sichuan", "Tibet", "Gansu", "Xinjiang", "Inner Mongolia", "Qinghai",
           "Guizhou")
MINERALS = ("copper", "gold", "molybdenum", "lead", "zinc", "tungsten")

FILTERS = {
    "folder (2%)": {"folder": "area-07"},
    "year = 2019 (10%)": {"frontmatter": {"year": 2019}},
    "year >= 2020 (50%)": {"frontmatter": {"year": {"gte": 2020}}},
    "region + year (1.25%)": {"frontmatter": {"region": "Tibet", "year": 2021}},
    "mineral one-of (~56%)": {"frontmatter": {"mineral": ["gold", "tungsten"]}},
    "tag (5%)": {"tags": ["lot-03"]},
    "title substring (4.4%)": {"title": "survey 12"},
}


def note_fields(index: int) -> list[str]:
    """The frontmatter lines of note `index`."""
    minerals = sorted({MINERALS[index % 6], MINERALS[(index // 6) % 6]})
    return [f"title: Survey {index}", f"year: {2015 + index % 10}",
            f"region: {REGIONS[(index // 10) % 8]}", f"mineral: [{', '.join(minerals)}]",
            f"tags: [geology, lot-{index % 20:02d}]"]


def measure(queries: list[str], filters: dict | None) -> dict:
    from access.callers import scope_all
    from core.config import get_config
    from retrieval.filters import filtered_scope, filters_parse
    from retrieval.services import search

    config = dataclasses.replace(get_config(), rag_retrieval="hybrid")
    scope = scope_all()
    parsed = filters_parse(filters)
    admitted = (filtered_scope(filters=parsed, knowledge_base_ids=scope.knowledge_base_ids)
                if parsed is not None else None)
    times, returned = [], []
    for query in queries:
        started = time.perf_counter()
        outcome = search(RetrievalRequest(query=query, scope=scope, top_k=10, filters=parsed),
                         config=config)
        times.append(time.perf_counter() - started)
        returned.append(len(outcome.results))
    return {**percentiles(times), "mean_results": round(sum(returned) / len(returned), 2),
            "documents": len(admitted.document_ids) if admitted else None,
            "chunks": admitted.chunks if admitted else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=25_000, help="4 chunks each")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the vault and its index")
    parser.add_argument("--reuse", action="store_true", help="measure a vault kept by --keep")
    args = parser.parse_args()
    django_setup()
    words = vocabulary(random.Random(SEED))
    queries = queries_make(args.queries, words)
    root = (args.vault or Path(tempfile.mkdtemp(prefix="local-rag-filters-"))).resolve()
    base = {"notes": args.notes, "load_1m": round(os.getloadavg()[0], 2)}
    try:
        if not args.reuse:
            vault_write(root, args.notes, words, frontmatter=note_fields)
            print(json.dumps({**base, **ingest(root, "cold_ingest")}), flush=True)
            vacuum()
        measure(queries[:10], None)  # warm the caches and connection
        for name, filters in [("unfiltered", None), *FILTERS.items()]:
            print(json.dumps({**base, "measurement": name, "load_1m": round(
                os.getloadavg()[0], 2), **measure(queries, filters)}), flush=True)
    finally:
        if not args.keep:
            vault_remove(root, folder_too=args.vault is None)


if __name__ == "__main__":
    sys.exit(main())
