"""The lexical search index's candidates against the exhaustive BM25 ranking: recall and latency
at each RAG_SEARCH_INDEX_CANDIDATES, on the test queries of a BEIR collection ingested into a kept
knowledge base (`rag eval --beir PATH --kb SLUG`), or on bench/scale.py's queries (`scale.py
--reuse --sweep-candidates ...`). One JSON line per width and limit.

    .venv/bin/python bench/search_index.py --beir .local/beir/scifact --kb beir-scifact \
        --candidates 25 50 100 200
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _setup import django_setup, percentiles


def candidates_sweep(queries: list[str], widths: list[int], limit: int, *,
                     knowledge_base_ids: list[int] | None) -> list[dict]:
    """Recall@10 (@5 for a top 5) and latency of the indexed lexical channel at each
    RAG_SEARCH_INDEX_CANDIDATES
    in `widths`, against the exhaustive ranking (computed once per query)."""
    import dataclasses

    from access.callers import scope_all
    from core.config import config_use, get_config
    from retrieval.lexical import lexical_search

    kb_ids = knowledge_base_ids or scope_all().knowledge_base_ids
    base = get_config()
    truth = [[hit.chunk_id for hit in lexical_search(query=query, limit=10,
                                                     knowledge_base_ids=kb_ids,
                                                     exhaustive=True)] for query in queries]
    rows = []
    try:
        for width in widths:
            config_use(dataclasses.replace(base, rag_search_index_candidates=width))
            times, found = [], 0.0
            for query, top in zip(queries, truth):
                started = time.perf_counter()
                hits = lexical_search(query=query, limit=limit, knowledge_base_ids=kb_ids)
                times.append(time.perf_counter() - started)
                depth = min(10, limit)  # recall@depth: a top 5 holds at most 5 of ten
                got = {hit.chunk_id for hit in hits[:depth]}
                found += len(got & set(top[:depth])) / len(top[:depth]) if top else 1.0
            rows.append({"measurement": "lexical_candidates", "candidates": width,
                         "limit": limit, "recall": round(found / len(queries), 4),
                         **percentiles(times)})
    finally:
        config_use(base)
    return rows


def beir_test_queries(path: Path, split: str) -> list[str]:
    """The text of every query judged in `split`, by id."""
    judged = set()
    with (path / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3 and fields[0] != "query-id":
                judged.add(fields[0])
    texts = {}
    with (path / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            query = json.loads(line)
            if query["_id"] in judged:
                texts[query["_id"]] = query["text"]
    return [texts[key] for key in sorted(texts)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--kb", required=True, help="the base the collection is ingested into")
    parser.add_argument("--candidates", type=int, nargs="+", default=[25, 50, 100, 200])
    parser.add_argument("--limits", type=int, nargs="+", default=[10, 50])
    args = parser.parse_args()
    django_setup()
    from knowledge.bases import kb_get

    base = kb_get(args.kb)
    queries = beir_test_queries(args.beir, args.split)
    for limit in args.limits:
        for row in candidates_sweep(queries, args.candidates, limit,
                                    knowledge_base_ids=[base.id]):
            print(json.dumps({"collection": args.beir.name, "queries": len(queries),
                              "load_1m": round(os.getloadavg()[0], 2), **row}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
