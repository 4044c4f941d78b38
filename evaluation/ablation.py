"""`rag eval --ablation`: the same questions under every retrieval configuration, one table.

Rows: vector, lexical, hybrid, and hybrid with each rerank provider that can run here (features
always; cross-encoder and openai-compatible when configured and ready). Columns: Hit@1, Hit@5,
MRR and nDCG@10 over the in-domain questions, refusal precision and recall at the calibrated
threshold, and the p50 latency of retrieval. Each row carries a hash of its configuration and
the report a hash of the indexed corpus, so two runs can be compared.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import statistics
import time
from typing import Any

from access.callers import Scope
from answering.modes import MODE_NO_ANSWER, MODE_RAG
from core.config import Config
from embeddings import get_embedder
from evaluation.questions import NDCG_DEPTH, Question, ndcg_at_10, refusal_scores
from knowledge.selectors import corpus_fingerprint
from retrieval.rerank import reranker_status
from retrieval.services import search
from retrieval.types import RetrievalRequest

RANKING_DEPTH = NDCG_DEPTH  # results retrieved per question: nDCG@10 needs ten
BASE_ROWS = (("vector", "none"), ("lexical", "none"), ("hybrid", "none"))
RERANK_ROWS = ("features", "cross-encoder", "openai-compatible")


def ablation_rows(*, config: Config) -> list[tuple[str, str]]:
    """(retrieval mode, rerank provider) pairs that can run with this configuration."""
    rows = list(BASE_ROWS)
    for provider in RERANK_ROWS:
        if reranker_status(config=dataclasses.replace(config, rag_rerank=provider)) == "ok":
            rows.append(("hybrid", provider))
    return rows


def ablation_run(*, questions: list[Question], config: Config, scope: Scope) -> dict[str, Any]:
    """The ablation report that `rag eval --ablation --json` prints."""
    embedder = get_embedder(config=config)
    rows = []
    for mode, rerank in ablation_rows(config=config):
        variant = dataclasses.replace(config, rag_retrieval=mode, rag_rerank=rerank)
        rows.append(_row(questions=questions, config=variant, embedder=embedder, scope=scope))
    return {"threshold": config.threshold, "threshold_origin": config.threshold_origin,
            "embedding_provider": config.embedding_provider,
            "embedding_model": config.embedding_model, "questions": len(questions),
            "corpus_hash": corpus_fingerprint(), "rows": rows}


def config_hash(*, config: Config) -> str:
    """A short hash of every setting that changes what retrieval returns."""
    settings = {name: getattr(config, name) for name in (
        "embedding_provider", "embedding_model", "rag_retrieval", "rag_candidates",
        "rag_rerank", "rerank_model", "rerank_base_url", "rag_vector_index",
        "rag_hnsw_min_chunks", "rag_hnsw_target_recall", "hnsw_ef_search",
        "rag_min_similarity")}
    settings["threshold"] = config.threshold
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


def _row(*, questions: list[Question], config: Config, embedder: Any,
         scope: Scope) -> dict[str, Any]:
    ranks, ndcgs, latencies, decided = [], [], [], []
    kinds: dict[str, list[int | None]] = {}
    for question in questions:
        started = time.perf_counter()
        outcome = search(RetrievalRequest(query=question.question, scope=scope,
                                          top_k=RANKING_DEPTH), config=config, embedder=embedder)
        latencies.append((time.perf_counter() - started) * 1000)
        decided.append((question.expected_mode, outcome.confidence))
        if question.expected_mode != MODE_RAG:
            continue
        sources = [hit.source for hit in outcome.results]
        rank = next((position for position, source in enumerate(sources, start=1)
                     if source in question.expected_sources), None)
        ranks.append(rank)
        if question.kind:
            kinds.setdefault(question.kind, []).append(rank)
        ndcgs.append(ndcg_at_10(sources=sources, expected=question.expected_sources))
    refusals = refusal_scores(decided=decided, threshold=config.threshold)
    count = len(ranks)
    return {
        "retrieval": config.rag_retrieval, "rerank": config.rag_rerank,
        "config_hash": config_hash(config=config),
        "hit_at_1": _share(sum(rank == 1 for rank in ranks), count),
        "hit_at_5": _share(sum(rank is not None and rank <= 5 for rank in ranks), count),
        "mrr": _share(sum(1 / rank for rank in ranks if rank), count),
        "ndcg_at_10": _share(sum(ndcgs), count),
        "refusal_precision": refusals["precision"], "refusal_recall": refusals["recall"],
        "no_answer_questions": sum(mode == MODE_NO_ANSWER for mode, _ in decided),
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "hit_at_1_by_kind": {kind: _share(sum(rank == 1 for rank in found), len(found))
                             for kind, found in sorted(kinds.items())},
    }


def _share(part: float, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None
