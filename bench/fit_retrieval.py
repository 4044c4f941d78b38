"""Fit the fusion and rerank weights on the train/dev splits of public BEIR collections.

The slow step (searching) runs once per collection and embedder:

    # per collection, with the embedder to fit for (EMBEDDING_PROVIDER / EMBEDDING_MODEL):
    .venv/bin/python bench/fit_retrieval.py dump --beir /data/scifact --split train \\
        --kb beir-scifact --max-queries 300 --out .local/fit/scifact-fake.json
    # the lexical channel alone at each heading weight:
    .venv/bin/python bench/fit_retrieval.py heading --beir /data/scifact --split train \\
        --kb beir-scifact --max-queries 300 --weights 1 1.5 2 3 4
    # then, over the dumps of one embedder:
    .venv/bin/python bench/fit_retrieval.py fit .local/fit/*-fake.json --seed 13

`dump` ingests the collection into the named knowledge base (kept: a second run skips the
unchanged files; `heading` ingests likewise), runs every judged query of the split (or a
seeded sample) through the hybrid pipeline without rerank and writes each query's best
RAG_CANDIDATES fused candidates (their cosine, BM25, channel ranks and features signals) and the
query's judgments. `fit` prints, as JSON, the vector
weight of convex fusion (evaluation/fitting.py fusion_fit), the `features` weights fitted on top
of it (rerank_fit, reproducible from --seed), and the per-collection nDCG@10 of each channel,
of RRF, of the fitted fusion and of the fitted rerank. Never point it at a test split: the
weights it prints are what the code ships with (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from pathlib import Path

from _setup import django_setup

SIGNALS = ("fused", "coverage", "proximity", "identifier", "bm25", "cosine")


def queries_sample(query_ids: list[str], args: argparse.Namespace) -> list[str]:
    """All the split's judged queries, or a sample of --max-queries drawn with --seed."""
    if args.max_queries and len(query_ids) > args.max_queries:
        return sorted(random.Random(args.seed).sample(query_ids, args.max_queries))
    return query_ids


def dump(args: argparse.Namespace) -> None:
    django_setup()
    from access.callers import Scope
    from core.config import get_config
    from embeddings import get_embedder
    from evaluation.beir import beir_index, beir_load
    from retrieval.pipeline import pipeline_run
    from retrieval.rerank.base import RerankCandidate
    from retrieval.rerank.features import features_signals
    from retrieval.types import RetrievalRequest

    config = dataclasses.replace(get_config(), rag_rerank="none", rag_fusion="convex")
    collection = beir_load(path=Path(args.beir), split=args.split)
    query_ids = queries_sample(sorted(collection.queries), args)
    base, paths, result = beir_index(collection=collection, config=config, slug=args.kb)
    print(f"{args.kb}: {result.chunks_written} chunks written, "
          f"{result.embeddings_written} embeddings", file=sys.stderr)
    embedder = get_embedder(config=config)
    queries = []
    for number, query_id in enumerate(query_ids, start=1):
        text = collection.queries[query_id]
        # The best RAG_CANDIDATES of the fusion: all a reranker could lift into the top ten.
        run = pipeline_run(RetrievalRequest(query=text, scope=Scope.of([base]),
                                            top_k=config.rag_candidates, mode="hybrid"),
                           vector=embedder.embed_query(text), config=config, embedder=embedder)
        bm25_max = max((item.bm25 for item in run.results if item.bm25), default=0.0)
        candidates = []
        for item in run.results:
            signals = features_signals(query=text, bm25_max=bm25_max, candidate=RerankCandidate(
                chunk_id=item.chunk_id, content=item.hit.content,
                heading_path=item.hit.heading_path, relative_path=item.hit.relative_path,
                fused_rank=item.fused_rank or 0, cosine=item.cosine, bm25=item.bm25,
                term_coverage=item.matched_share, fused_score=item.fused_score))
            candidates.append({"doc_id": paths.get(item.hit.relative_path, ""),
                               "cosine": item.cosine or 0.0, "bm25": item.bm25,
                               "vector_rank": item.vector_rank,
                               "lexical_rank": item.lexical_rank,
                               "signals": dataclasses.asdict(signals)})
        queries.append({"id": query_id, "judged": collection.qrels[query_id],
                        "candidates": candidates})
        if number % 50 == 0:
            print(f"  {number}/{len(query_ids)} queries", file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({
        "collection": collection.name, "split": args.split, "kb": args.kb,
        "embedding_provider": config.embedding_provider,
        "embedding_model": config.embedding_model, "queries": queries}))


def heading(args: argparse.Namespace) -> None:
    """nDCG@10 of the lexical channel alone at each heading weight, on an ingested base."""
    django_setup()
    from core.config import get_config
    from evaluation.beir import beir_index, beir_load
    from evaluation.fitting import ndcg_at_10
    from retrieval import sql
    from retrieval.lexical import lexical_search

    collection = beir_load(path=Path(args.beir), split=args.split)
    query_ids = queries_sample(sorted(collection.queries), args)
    base, paths, _ = beir_index(collection=collection, config=get_config(), slug=args.kb)
    report = {}
    for weight in args.weights:
        sql.LEXICAL_HEADING_WEIGHT = weight
        total = 0.0
        for query_id in query_ids:
            hits = lexical_search(query=collection.queries[query_id], limit=10,
                                  knowledge_base_ids=[base])
            total += ndcg_at_10(ranking=[paths.get(hit.relative_path, "") for hit in hits],
                                judged=collection.qrels[query_id])
        report[str(weight)] = round(total / len(query_ids), 4)
    print(json.dumps({"collection": collection.name, "split": args.split,
                      "queries": len(query_ids), "lexical_ndcg_at_10_by_heading_weight": report}))


def fit(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from evaluation.fitting import (
        TableCandidate,
        TableQuery,
        fusion_fit,
        fusion_quality,
        ndcg_at_10,
        rerank_fit,
    )
    from retrieval.fusion import rrf_fuse

    tables = {}
    for name in args.dumps:
        dumped = json.loads(Path(name).read_text())
        tables[f"{dumped['collection']}/{dumped['split']}"] = [
            TableQuery(judged=query["judged"], candidates=[
                TableCandidate(doc_id=c["doc_id"], cosine=c["cosine"], bm25=c["bm25"],
                               signals=c["signals"], vector_rank=c["vector_rank"],
                               lexical_rank=c["lexical_rank"]) for c in query["candidates"]])
            for query in dumped["queries"]]
    weight, fused = fusion_fit(tables)
    rerank_weights, reranked = rerank_fit(tables, vector_weight=weight, signals=SIGNALS,
                                          seed=args.seed)

    def channel(query: TableQuery, key: str) -> list[str]:
        scored = [c for c in query.candidates if key == "cosine" or c.bm25 is not None]
        scored.sort(key=lambda c: -(c.cosine if key == "cosine" else c.bm25))
        return [c.doc_id for c in scored]

    def rrf(query: TableQuery) -> list[str]:
        """The service's RRF (retrieval/fusion.py) over each channel's ranks in the dump."""
        rankings = {name: sorted((index for index, c in enumerate(query.candidates)
                                  if getattr(c, f"{name}_rank") is not None),
                                 key=lambda index: getattr(query.candidates[index],
                                                           f"{name}_rank"))
                    for name in ("vector", "lexical")}
        return [query.candidates[fused.chunk_id].doc_id for fused in rrf_fuse(rankings=rankings)]

    def mean(queries: list[TableQuery], rank) -> float:
        return round(sum(ndcg_at_10(ranking=rank(q), judged=q.judged) for q in queries)
                     / len(queries), 4)

    report = {
        "fusion_vector_weight": weight,
        "rerank_weights": rerank_weights,
        "seed": args.seed,
        "ndcg_at_10": {name: {
            "lexical": mean(queries, lambda q: channel(q, "bm25")),
            "vector": mean(queries, lambda q: channel(q, "cosine")),
            "rrf": mean(queries, rrf),
            "convex": round(fused[name], 4),
            "rerank": round(reranked[name], 4)} for name, queries in tables.items()},
        "fusion_grid": {str(w): {name: round(value, 4) for name, value in fusion_quality(
            tables, vector_weight=w).items()} for w in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)},
    }
    print(json.dumps(report, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = parser.add_subparsers(dest="step", required=True)
    dumping = steps.add_parser("dump")
    dumping.add_argument("--beir", required=True)
    dumping.add_argument("--split", required=True)
    dumping.add_argument("--kb", required=True)
    dumping.add_argument("--max-queries", type=int, default=None)
    dumping.add_argument("--seed", type=int, default=13)
    dumping.add_argument("--out", required=True)
    weighing = steps.add_parser("heading", help="the lexical channel at each heading weight")
    weighing.add_argument("--beir", required=True)
    weighing.add_argument("--split", required=True)
    weighing.add_argument("--kb", required=True)
    weighing.add_argument("--max-queries", type=int, default=None)
    weighing.add_argument("--seed", type=int, default=13)
    weighing.add_argument("--weights", type=float, nargs="+", default=[1.0, 1.5, 2.0, 3.0])
    fitting = steps.add_parser("fit")
    fitting.add_argument("dumps", nargs="+")
    fitting.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    if args.step in ("dump", "heading"):
        if args.split == "test":
            parser.error("fit on train or dev splits only; test is for reporting")
        (dump if args.step == "dump" else heading)(args)
    else:
        fit(args)


if __name__ == "__main__":
    main()
