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
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _setup import django_setup, vacuum
from lexical import vocabulary
from scale import SECTIONS, SEED, ingest, percentiles, queries_make, section_text

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


def vault_write(root: Path, notes: int, words: tuple) -> None:
    rng = random.Random(SEED)
    english = words[0]
    for index in range(notes):
        folder = root / f"area-{index % 50:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        minerals = sorted({MINERALS[index % 6], MINERALS[(index // 6) % 6]})
        lines = ["---", f"title: Survey {index}", f"year: {2015 + index % 10}",
                 f"region: {REGIONS[(index // 10) % 8]}", f"mineral: [{', '.join(minerals)}]",
                 f"tags: [geology, lot-{index % 20:02d}]", "---", f"# Note {index}"]
        for section in range(SECTIONS):
            lines.append(f"## {rng.choice(english[:400]).capitalize()} {section}")
            lines.append(section_text(rng, words))
        (folder / f"note-{index:06d}.md").write_text("\n\n".join(lines) + "\n", encoding="utf-8")


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
        outcome = search(query=query, top_k=10, config=config, scope=scope, filters=parsed)
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
    from knowledge.store import documents_delete

    words = vocabulary(random.Random(SEED))
    queries = queries_make(args.queries, words)
    root = (args.vault or Path(tempfile.mkdtemp(prefix="local-rag-filters-"))).resolve()
    base = {"notes": args.notes, "load_1m": round(os.getloadavg()[0], 2)}
    try:
        if not args.reuse:
            vault_write(root, args.notes, words)
            print(json.dumps({**base, **ingest(root, "cold_ingest")}), flush=True)
            vacuum()
        measure(queries[:10], None)  # warm the caches and connection
        for name, filters in [("unfiltered", None), *FILTERS.items()]:
            print(json.dumps({**base, "measurement": name, "load_1m": round(
                os.getloadavg()[0], 2), **measure(queries, filters)}), flush=True)
    finally:
        if not args.keep:
            relative = [path.relative_to(root).as_posix() for path in root.rglob("*.md")]
            for start in range(0, len(relative), 5000):
                documents_delete(vault_path=str(root), relative_paths=relative[start:start + 5000])
            vacuum()
            if args.vault is None:
                shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
