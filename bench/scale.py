"""Scale benchmark: a team's vault of 100k chunks (1M with --million), end to end.

Writes N notes of four sections each (one chunk per section: Zipf-distributed mixed Chinese and
English words with identifiers) as Markdown files, ingests them through the normal ingest
(cold, then unchanged; the first ingest builds the search index at its end), rebuilds the
search index once more to time it and measures its size on disk and in memory, checks the
lexical top 50 (from the search index, or the impact cells without it) against the exhaustive
ranking on every query, then measures over HTTP keep-alive through `rag serve`: the default
pipeline with 1 and 8 clients and the lexical channel alone (RAG_RETRIEVAL=lexical), with the
stage timings the explain output reports, with the search index on and off
(--search-index). Queries hold 2-12 terms drawn from the same vocabulary, identifiers
included. Runs against DATABASE_URL (`rag pg start && rag db init`); prints one JSON line per
measurement. The vault's documents are removed afterwards unless --keep is given.

    .venv/bin/python bench/scale.py                   # 100k chunks
    .venv/bin/python bench/scale.py --million         # 1M chunks (hours of ingest)
    .venv/bin/python bench/scale.py --notes 25000 --vault .local/scale --keep   # then --reuse
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _setup import django_setup, percentiles, server_start, vacuum
from lexical import identifier, vocabulary
from search_index import candidates_sweep

SEED = 29
SECTIONS = 4


def section_text(rng: random.Random, words: tuple) -> str:
    """60-200 terms: English and Chinese sentences of Zipf-distributed words, identifiers.
    (bench/lexical.py's chunk_text makes longer chunks with other sentence lengths; this one is
    kept as the measurements in docs/benchmarks.md were taken.)"""
    english, english_weights, chinese, chinese_weights = words
    parts = []
    for _ in range(rng.randint(4, 10)):
        roll = rng.random()
        if roll < 0.45:
            sentence = rng.choices(english, cum_weights=english_weights, k=rng.randint(5, 14))
            parts.append(" ".join(sentence).capitalize() + ".")
        elif roll < 0.9:
            sentence = rng.choices(chinese, cum_weights=chinese_weights, k=rng.randint(3, 9))
            parts.append("".join(sentence) + "。")
        else:
            parts.append(f"See {identifier(rng)}.")
    return " ".join(parts)


def vault_write(root: Path, notes: int, words: tuple,
                frontmatter: Callable[[int], list[str]] | None = None) -> None:
    """`notes` notes in 50 folders; `frontmatter(index)`, when given, the YAML lines of each."""
    rng = random.Random(SEED)
    english = words[0]
    for index in range(notes):
        folder = root / f"area-{index % 50:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        head = ["---", *frontmatter(index), "---"] if frontmatter else []
        lines = [*head, f"# Note {index}"]
        for section in range(SECTIONS):
            lines.append(f"## {rng.choice(english[:400]).capitalize()} {section}")
            lines.append(section_text(rng, words))
        (folder / f"note-{index:06d}.md").write_text("\n\n".join(lines) + "\n", encoding="utf-8")


def queries_make(count: int, words: tuple) -> list[str]:
    """2-12 terms each, drawn with the corpus's own Zipf weights (so common terms are common in
    queries too), a third with an identifier, half mixing the two languages."""
    rng = random.Random(SEED + 1)
    english, english_weights, chinese, chinese_weights = words
    queries = []
    for _ in range(count):
        size = rng.randint(2, 12)
        terms: list[str] = []
        if rng.random() < 1 / 3:
            terms.append(identifier(rng))
        mixed = rng.random() < 0.5
        english_share = 0.5 if mixed else (1.0 if rng.random() < 0.5 else 0.0)
        while len(terms) < size:
            if rng.random() < english_share:
                terms.append(rng.choices(english, cum_weights=english_weights)[0])
            else:
                terms.append(rng.choices(chinese, cum_weights=chinese_weights)[0])
        queries.append(" ".join(terms))
    return queries


def ingest(root: Path, name: str) -> dict:
    from core.config import get_config
    from knowledge.ingest import IngestRequest, vault_ingest

    started = time.perf_counter()
    result = vault_ingest(IngestRequest(vault_path=root), config=get_config())
    elapsed = time.perf_counter() - started
    return {"measurement": name, "seconds": round(elapsed, 1),
            "chunks_written": result.chunks_written,
            "chunks_per_s": round(result.chunks_written / elapsed) if result.chunks_written else 0,
            "notes_per_s": round((result.documents_added + result.documents_updated
                                  + result.documents_skipped) / elapsed),
            "timings": result.timings}


def lexical_check(queries: list[str], limit: int) -> dict:
    """The pruned ranking against the exhaustive one on every query, and both one's latency."""
    from access.callers import scope_all
    from retrieval.lexical import LexicalReport, lexical_search

    kb_ids = scope_all().knowledge_base_ids
    equal = overlap = 0
    paths: dict[str, int] = {}
    pruned_times, exhaustive_times, levels, scored, exhaustive_scored = [], [], [], [], []
    scored_total = []
    for query in queries:
        report = LexicalReport()
        started = time.perf_counter()
        pruned = lexical_search(query=query, limit=limit, knowledge_base_ids=kb_ids,
                                report=report)
        pruned_times.append(time.perf_counter() - started)
        full_report = LexicalReport()
        started = time.perf_counter()
        full = lexical_search(query=query, limit=limit, knowledge_base_ids=kb_ids,
                              exhaustive=True, report=full_report)
        exhaustive_times.append(time.perf_counter() - started)
        path = (report.index or {}).get("path", "none")
        paths[path] = paths.get(path, 0) + 1
        levels.append(report.levels)
        scored.append(report.scored)
        scored_total.append(report.scored_total)
        exhaustive_scored.append(full_report.scored)
        same = [(hit.chunk_id, round(hit.score, 9)) for hit in pruned] \
            == [(hit.chunk_id, round(hit.score, 9)) for hit in full]
        equal += same
        top = {hit.chunk_id for hit in full[:10]}
        overlap += len(top & {hit.chunk_id for hit in pruned[:10]}) / len(top) if top else 1
    return {"measurement": "lexical_pruned_vs_exhaustive", "queries": len(queries),
            "candidates_from": paths,
            "identical_rankings": equal, "recall_at_10": round(overlap / len(queries), 4),
            "pruned": percentiles(pruned_times), "exhaustive": percentiles(exhaustive_times),
            "runs_per_query": {str(n): levels.count(n) for n in sorted(set(levels))},
            "chunks_scored_median": statistics.median(scored),
            "chunks_scored_all_runs_median": statistics.median(scored_total),
            "chunks_scored_exhaustive_median": statistics.median(exhaustive_scored)}


def index_measure() -> dict:
    """A full rebuild of every base's search index (timed), its size on disk, and what opening
    it and answering the bench's queries adds to this process's resident memory."""
    from access.callers import scope_all
    from core.config import get_config
    from index.maintenance import base_catch_up
    from index.status import index_status

    config = get_config()
    bases = [base for base in index_status(config=config) if base.chunks]
    started = time.perf_counter()
    outcomes = [base_catch_up(knowledge_base_id=base.knowledge_base_id, config=config,
                              rebuild=True) for base in bases]
    seconds = time.perf_counter() - started
    after = index_status(config=config)
    before_rss = _rss_mb()
    from embeddings import get_embedder
    from retrieval.lexical import lexical_search
    from retrieval.vector import vector_search

    embedder = get_embedder(config=config)
    kb_ids = scope_all().knowledge_base_ids
    for query in queries_make(50, vocabulary(random.Random(SEED))):
        lexical_search(query=query, limit=50, knowledge_base_ids=kb_ids)
        vector_search(vector=embedder.embed_query(query), limit=50, config=config,
                      embedder=embedder, knowledge_base_ids=kb_ids)
    chunks = sum(base.indexed for base in after)
    return {"measurement": "search_index", "rebuild_seconds": round(seconds, 1),
            "chunks": chunks, "disk_mb": round(sum(base.bytes for base in after) / 1e6, 1),
            "disk_mb_per_100k_chunks": round(sum(base.bytes for base in after) / 1e6
                                             * 100_000 / max(chunks, 1), 1),
            "rss_added_mb": round(_rss_mb() - before_rss, 1),
            "parts": [outcome.lexical + "/" + outcome.vectors for outcome in outcomes]}


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def over_http(url: str, queries: list[str], concurrency: int) -> dict:
    """Latency of /search over keep-alive. A request the server refuses (a statement past
    RAG_STATEMENT_TIMEOUT_SECONDS answers 503 database_timeout) is counted under its error code
    and its time still goes into the percentiles: the run reports it instead of stopping."""
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    stages: dict[str, list[float]] = {}
    failures: dict[str, int] = {}

    def failure(response: httpx.Response) -> None:
        try:
            code = response.json()["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = f"http_{response.status_code}"
        failures[code] = failures.get(code, 0) + 1

    with httpx.Client(base_url=url, timeout=120, limits=limits) as client:
        for query in queries[:5]:  # warm-up: connections, plans, caches
            client.post("/search", json={"query": query})

        def one(query: str) -> float:
            started = time.perf_counter()
            response = client.post("/search", json={"query": query, "explain": True})
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                failure(response)
                return elapsed
            for stage, ms in response.json()["explain"]["timings_ms"].items():
                stages.setdefault(stage, []).append(ms)
            return elapsed

        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            samples = list(pool.map(one, queries))
    return {**percentiles(samples), "clients": concurrency, "failed": failures,
            "stage_p50_ms": {stage: round(statistics.median(ms), 2)
                             for stage, ms in sorted(stages.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=25_000, help="4 chunks each")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vault", type=Path, default=None,
                        help="where to write the notes (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the vault and its index")
    parser.add_argument("--reuse", action="store_true",
                        help="measure a vault kept by --keep (no writing, no ingest)")
    parser.add_argument("--check-queries", type=int, default=None,
                        help="compare pruned and exhaustive BM25 on the first N queries only "
                             "(default: all; at 1M chunks one exhaustive ranking takes ~25 s)")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP measurements")
    parser.add_argument("--sweep-candidates", type=int, nargs="*", default=None,
                        help="only measure recall@10 and latency of the indexed lexical channel "
                             "at these RAG_SEARCH_INDEX_CANDIDATES (with --reuse)")
    parser.add_argument("--million", action="store_true",
                        help="250,000 notes (1M chunks) instead of --notes")
    parser.add_argument("--search-index", choices=["on", "off", "both"], default="both",
                        help="the HTTP runs with RAG_SEARCH_INDEX on, off (SQL alone), or both")
    args = parser.parse_args()
    django_setup()
    from core.config import get_config

    if args.million:
        args.notes = 250_000
    words = vocabulary(random.Random(SEED))
    queries = queries_make(args.queries, words)
    root = (args.vault or Path(tempfile.mkdtemp(prefix="local-rag-scale-"))).resolve()
    base = {"notes": args.notes, "load_1m": round(os.getloadavg()[0], 2)}
    try:
        if not args.reuse:
            started = time.perf_counter()
            vault_write(root, args.notes, words)
            print(json.dumps({**base, "measurement": "write_files",
                              "seconds": round(time.perf_counter() - started, 1)}), flush=True)
            vacuum()
            print(json.dumps({**base, **ingest(root, "cold_ingest")}), flush=True)
            print(json.dumps({**base, **ingest(root, "unchanged_reingest")}), flush=True)
            vacuum()
        if args.sweep_candidates:
            for limit in (5, get_config().rag_candidates):
                for row in candidates_sweep(queries, args.sweep_candidates, limit,
                                            knowledge_base_ids=None):
                    print(json.dumps({**base, **row}), flush=True)
            return
        if get_config().rag_search_index == "on":
            print(json.dumps({**base, **index_measure()}), flush=True)
        print(json.dumps({**base, **lexical_check(queries[:args.check_queries],
                                                 get_config().rag_candidates)},
                         ensure_ascii=False), flush=True)
        settings = ["on", "off"] if args.search_index == "both" else [args.search_index]
        for setting in settings if not args.no_http else []:
            for retrieval, clients in (("hybrid", 1), ("hybrid", 8), ("lexical", 1)):
                process, url = server_start(env={**os.environ, "RAG_RETRIEVAL": retrieval,
                                                 "RAG_SEARCH_INDEX": setting})
                try:
                    print(json.dumps({**base, "measurement": f"http_{retrieval}",
                                      "search_index": setting,
                                      "load_1m": round(os.getloadavg()[0], 2),
                                      **over_http(url, queries, clients)}), flush=True)
                finally:
                    process.terminate()
                    process.wait(timeout=30)
    finally:
        if not args.keep:
            vault_remove(root, folder_too=args.vault is None)


def vault_remove(root: Path, *, folder_too: bool) -> None:
    """The benchmark vault's documents out of the index (and its folder off the disk)."""
    from knowledge.store import documents_delete

    relative = [path.relative_to(root).as_posix() for path in root.rglob("*.md")]
    for start in range(0, len(relative), 5000):
        documents_delete(vault_path=str(root), relative_paths=relative[start:start + 5000])
    vacuum()
    if folder_too:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
