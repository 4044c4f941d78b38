"""Tune the `features` reranker's weights on the project's questions (grid search).

For every in-domain question of eval/questions.yaml and eval/retrieval-questions.yaml, the
hybrid pipeline's fused candidates (RAG_CANDIDATES) are scored once per signal; then every
weight vector of a coarse grid reranks them, and the table prints MRR and Hit@1 for the best
vectors and for the current constants. Needs an ingested sample vault on DATABASE_URL:
    rag ingest samples/acme-vault && .venv/bin/python bench/rerank_weights.py
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json

from _setup import ROOT, django_setup

GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
NAMES = ("coverage", "proximity", "identifier", "bm25", "cosine")


def signal_table(config) -> list[tuple[list[str], list[tuple[str, tuple[float, ...]]]]]:
    """Per question: its expected sources and (source, signals) of each fused candidate."""
    from answering.evaluation import questions_load
    from knowledge.access import scope_all
    from knowledge.embeddings import get_embedder
    from retrieval.pipeline import pipeline_run
    from retrieval.rerank import features_signals
    from retrieval.rerank.base import RerankCandidate

    embedder = get_embedder(config=config)
    fused = dataclasses.replace(config, rag_retrieval="hybrid", rag_rerank="none")
    table = []
    for name in ("questions.yaml", "retrieval-questions.yaml"):
        for question in questions_load(path=ROOT / "eval" / name):
            if question.expected_mode != "rag":
                continue
            run = pipeline_run(knowledge_base_ids=scope_all().knowledge_base_ids, query=question.question,
                               vector=embedder.embed_query(question.question),
                               top_k=config.rag_candidates, mode="hybrid", config=fused,
                               embedder=embedder)
            bm25_max = max((item.bm25 or 0.0 for item in run.results), default=0.0)
            rows = []
            for item in run.results:
                candidate = RerankCandidate(
                    chunk_id=item.chunk_id, content=item.hit.content,
                    heading_path=item.hit.heading_path, relative_path=item.hit.relative_path,
                    fused_rank=item.fused_rank or 0, cosine=item.cosine, bm25=item.bm25)
                signals = features_signals(query=question.question, candidate=candidate,
                                           bm25_max=bm25_max)
                rows.append((item.hit.source, tuple(getattr(signals, n) for n in NAMES)))
            table.append((question.expected_sources, rows))
    return table


def weights_score(table, weights: tuple[float, ...]) -> tuple[float, float]:
    """(MRR, Hit@1) of reranking every question's candidates by `weights` (stable sort: the
    fused order breaks ties, as the reranker does)."""
    reciprocal, hits = 0.0, 0
    for expected, rows in table:
        ranked = sorted(rows, key=lambda row: -sum(w * s for w, s in zip(weights, row[1])))
        rank = next((position for position, (source, _) in enumerate(ranked, start=1)
                     if source in expected), None)
        reciprocal += 1 / rank if rank else 0.0
        hits += rank == 1
    return reciprocal / len(table), hits / len(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    django_setup()
    from core.config import get_config
    from retrieval.rerank import FEATURE_WEIGHTS

    table = signal_table(get_config())
    results = []
    for weights in itertools.product(GRID, repeat=len(NAMES)):
        if abs(sum(weights) - 1.0) > 1e-9:
            continue
        results.append((*weights_score(table, weights), weights))
    results.sort(key=lambda row: (-row[0], -row[1], row[2]))
    current = tuple(getattr(FEATURE_WEIGHTS, name) for name in NAMES)
    print(json.dumps({"measurement": "current", "weights": dict(zip(NAMES, current)),
                      "mrr": round(weights_score(table, current)[0], 4),
                      "hit_at_1": round(weights_score(table, current)[1], 4),
                      "questions": len(table)}))
    for mrr, hit, weights in results[:args.top]:
        print(json.dumps({"measurement": "grid", "weights": dict(zip(NAMES, weights)),
                          "mrr": round(mrr, 4), "hit_at_1": round(hit, 4)}))


if __name__ == "__main__":
    main()
