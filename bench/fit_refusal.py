"""Fit the `signals` refusal rule (answering/refusal.py) on public BEIR collections, and report
it against the single threshold on their test splits.

Unanswerable questions come from other collections: the queries of collection A asked of the
knowledge base of collection B must be refused. B's own judged queries are answerable when one
of their relevant documents is in the top RAG_TOP_K results (a query whose relevant documents
retrieval misses is left out of the refusal scores: the base holds its answer, but nothing it
retrieved does). One dump per (queries, base) pair, searched exactly as /ask searches:

    .venv/bin/python bench/fit_refusal.py dump --beir /work/data/scifact --split train \\
        --kb beir-scifact --max-queries 300 --out .local/refusal/scifact-train@scifact.json
    # A's queries against B's base (already ingested: `rag kb list`):
    .venv/bin/python bench/fit_refusal.py dump --beir /work/data/nfcorpus --split train \\
        --kb beir-scifact --cross --max-queries 300 --out .local/refusal/nf-train@scifact.json
    # fit on the train/dev dumps, report on the test dumps:
    .venv/bin/python bench/fit_refusal.py fit --train .local/refusal/*-train@*.json \\
        .local/refusal/*-dev@*.json --test .local/refusal/*-test@*.json

`dump --cross` never ingests: the base must exist. Without it, the collection is ingested into
the base (a second run skips the unchanged files). `fit` prints, as JSON, the weights of a
class-balanced logistic model over `answering.refusal.signals_features` (Newton's method, L2
--l2), its cut (the probability at which the answerable train queries are answered as often as
under --shipped-threshold), its veto cut and the shipped model's (`veto_cut`: the cut above the
threshold that refuses none of the answerable train queries the threshold answers), the single
threshold that separates the train dumps best, and per question set and per base the refusal
precision and recall and the answer rate of the shipped threshold, of that fitted threshold, of
the model at one cut (its own, 0.5) and at its two cuts, and of the rule answering/refusal.py
ships (whose constants come from this output), also with its one former cut. The test dumps
are read only to report: nothing is fitted on them. bench/refusal_questions.py `--dump` writes
dumps of written questions (its dev split is where SIGNALS_VETO_CUT was chosen).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

from _setup import django_setup
from fit_retrieval import queries_sample

FEATURES = ("top", "gap", "1/support", "coverage", "cjk_share", "cjk_share*coverage")


def dump(args: argparse.Namespace) -> None:
    django_setup()
    from access.callers import Scope
    from core.config import get_config
    from embeddings import get_embedder
    from evaluation.beir import beir_index, beir_load
    from knowledge.bases import kb_get
    from retrieval.pipeline import pipeline_run
    from retrieval.types import RetrievalRequest

    config = get_config()
    collection = beir_load(path=Path(args.beir), split=args.split)
    query_ids = queries_sample(sorted(collection.queries), args)
    if args.cross:
        base, paths = kb_get(args.kb).id, {}
    else:
        base, paths, result = beir_index(collection=collection, config=config, slug=args.kb)
        print(f"{args.kb}: {result.chunks_written} chunks written", file=sys.stderr)
    embedder = get_embedder(config=config)
    queries = []
    for number, query_id in enumerate(query_ids, start=1):
        text = collection.queries[query_id]
        run = pipeline_run(RetrievalRequest(query=text, scope=Scope.of([base]),
                                            top_k=config.rag_top_k, mode=config.rag_retrieval),
                           vector=embedder.embed_query(text), config=config, embedder=embedder)
        ranking = list(dict.fromkeys(paths.get(item.hit.relative_path, "")
                                     for item in run.results))
        hit_rank = next((rank for rank, doc in enumerate(ranking, start=1)
                         if doc in collection.qrels[query_id]), None)
        queries.append({"id": query_id, "own": not args.cross, "hit_rank": hit_rank,
                        "confidence": run.confidence, "results": len(run.results),
                        "signals": run.signals.as_dict()})
        if number % 50 == 0:
            print(f"  {number}/{len(query_ids)} queries", file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({
        "collection": collection.name, "split": args.split, "kb": args.kb, "cross": args.cross,
        "embedding_provider": config.embedding_provider,
        "embedding_model": config.embedding_model, "retrieval": config.rag_retrieval,
        "rerank": config.rag_rerank, "top_k": config.rag_top_k, "threshold": config.threshold,
        "queries": queries}))


@dataclasses.dataclass(frozen=True)
class Sample:
    base: str
    collection: str  # whose question it is
    answerable: bool
    confidence: float
    has_results: bool
    features: tuple[float, ...]


def samples_load(names: list[str]) -> list[Sample]:
    """Every scored query of the dumps: own queries retrieval answers, other collections'."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from answering.refusal import signals_features
    from retrieval.signals import RefusalSignals

    samples = []
    for name in names:
        dumped = json.loads(Path(name).read_text())
        for query in dumped["queries"]:
            if query["own"] and not query["hit_rank"]:
                continue
            signals = RefusalSignals(**query["signals"])
            samples.append(Sample(base=dumped["kb"], collection=dumped["collection"],
                                  answerable=query["own"], confidence=query["confidence"],
                                  has_results=query["results"] > 0,
                                  features=signals_features(signals)))
    return samples


def logistic_fit(samples: list[Sample], *, l2: float,
                 iterations: int = 25) -> tuple[list[float], float]:
    """Weights and intercept of a logistic model of `answerable` by Newton's method, each class
    weighted to half the total (so the mix of the dumps does not decide the cut), with an L2
    penalty on the weights (not the intercept)."""
    positives = sum(s.answerable for s in samples)
    weight = {True: len(samples) / (2 * positives),
              False: len(samples) / (2 * (len(samples) - positives))}
    rows = [(1.0, *s.features) for s in samples]
    size = len(rows[0])
    beta = [0.0] * size
    for _ in range(iterations):
        gradient = [0.0] * size
        hessian = [[0.0] * size for _ in range(size)]
        for row, sample in zip(rows, samples):
            p = _sigmoid(_dot(beta, row))
            w = weight[sample.answerable]
            for i in range(size):
                gradient[i] += w * (p - sample.answerable) * row[i]
                for j in range(size):
                    hessian[i][j] += w * p * (1 - p) * row[i] * row[j]
        for i in range(1, size):
            gradient[i] += l2 * len(samples) * beta[i]
            hessian[i][i] += l2 * len(samples)
        step = _solve(hessian, gradient)
        beta = [b - d for b, d in zip(beta, step)]
    return [round(b, 3) for b in beta[1:]], round(beta[0], 3)


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """x with matrix · x = vector (Gaussian elimination with partial pivoting)."""
    size = len(vector)
    rows = [list(matrix[i]) + [vector[i]] for i in range(size)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda r: abs(rows[r][column]))
        rows[column], rows[pivot] = rows[pivot], rows[column]
        for r in range(column + 1, size):
            factor = rows[r][column] / rows[column][column]
            rows[r] = [a - factor * b for a, b in zip(rows[r], rows[column])]
    solution = [0.0] * size
    for r in reversed(range(size)):
        solution[r] = (rows[r][size] - sum(rows[r][c] * solution[c]
                                           for c in range(r + 1, size))) / rows[r][r]
    return solution


def _sigmoid(value: float) -> float:
    return 1 / (1 + math.exp(-max(-50.0, min(50.0, value))))


def _dot(left, right) -> float:
    return sum(a * b for a, b in zip(left, right))


def probability(sample: Sample, coefficients, intercept: float) -> float:
    return _sigmoid(intercept + _dot(coefficients, sample.features))


def scores(samples: list[Sample], refuses) -> dict[str, float | int | None]:
    """Refusal precision and recall, and the answer rate of the answerable queries."""
    refused = [s for s in samples if refuses(s)]
    unanswerable = sum(not s.answerable for s in samples)
    answerable = len(samples) - unanswerable
    correct = sum(not s.answerable for s in refused)
    answered = sum(s.answerable and not refuses(s) for s in samples)

    def ratio(part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    recall, rate = ratio(correct, unanswerable), ratio(answered, answerable)
    return {"answerable": answerable, "unanswerable": unanswerable,
            "refusal_precision": ratio(correct, len(refused)), "refusal_recall": recall,
            "answer_rate": rate,
            "balanced_accuracy": (round((recall + rate) / 2, 4)
                                  if recall is not None and rate is not None else None)}


def threshold_fit(samples: list[Sample]) -> float:
    """The single threshold of best balanced accuracy on `samples`."""
    grid = [step / 100 for step in range(1, 100)]
    return max(grid, key=lambda cut: (scores(samples, lambda s: not s.has_results
                                             or s.confidence < cut)["balanced_accuracy"], -cut))


def cut_matched(samples: list[Sample], coefficients, intercept: float, *,
                threshold: float) -> float:
    """The highest probability cut that answers the answerable `samples` at least as often as
    `threshold` does."""
    answerable = [s for s in samples if s.answerable]
    target = sum(s.has_results and s.confidence >= threshold for s in answerable)
    ranked = sorted((probability(s, coefficients, intercept) for s in answerable),
                    reverse=True)
    return math.floor(ranked[target - 1] * 1000) / 1000


def veto_cut(samples: list[Sample], coefficients, intercept: float, *,
             threshold: float) -> float | None:
    """The highest cut (0.01 steps) below the probability of every answerable sample that
    `threshold` answers: above the threshold, the model refuses none of them."""
    answered = [probability(s, coefficients, intercept) for s in samples
                if s.answerable and s.has_results and s.confidence >= threshold]
    return math.floor(min(answered) * 100) / 100 if answered else None


def fit(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from answering.refusal import (
        SIGNALS_COEFFICIENTS,
        SIGNALS_CUT,
        SIGNALS_INTERCEPT,
        SIGNALS_VETO_CUT,
    )

    train = samples_load(args.train)
    coefficients, intercept = logistic_fit(train, l2=args.l2)
    shipped = args.shipped_threshold
    cut = cut_matched(train, coefficients, intercept, threshold=shipped)
    veto = veto_cut(train, coefficients, intercept, threshold=shipped)
    threshold = threshold_fit(train)

    def signals_refuse(weights, bias: float, at: float, above: float | None = None):
        """Refuse below `at`; at or above the threshold below `above` instead, when given."""
        def refuses(s: Sample) -> bool:
            cut_here = above if above is not None and s.confidence >= shipped else at
            return not s.has_results or probability(s, weights, bias) < cut_here
        return refuses

    rules = {
        f"threshold {args.shipped_threshold}": lambda s: (not s.has_results
                                                          or s.confidence
                                                          < args.shipped_threshold),
        f"threshold {threshold} (fitted)": lambda s: not s.has_results or s.confidence
        < threshold,
        f"signals (fitted now, cut {cut})": signals_refuse(coefficients, intercept, cut),
        "signals (fitted now, cut 0.5)": signals_refuse(coefficients, intercept, 0.5),
        f"signals (fitted now, cuts {veto} / {cut})": signals_refuse(coefficients, intercept,
                                                                     cut, veto),
        "signals (shipped)": signals_refuse(SIGNALS_COEFFICIENTS, SIGNALS_INTERCEPT,
                                            SIGNALS_CUT, SIGNALS_VETO_CUT),
        "signals (shipped, one cut)": signals_refuse(SIGNALS_COEFFICIENTS, SIGNALS_INTERCEPT,
                                                     SIGNALS_CUT),
    }

    def table(samples: list[Sample]) -> dict:
        groups = {"all": samples,
                  **{f"questions of {name}": [s for s in samples if s.collection == name]
                     for name in sorted({s.collection for s in samples})},
                  **{f"base {base}": [s for s in samples if s.base == base]
                     for base in sorted({s.base for s in samples})}}
        return {group: {name: scores(members, rule) for name, rule in rules.items()}
                for group, members in groups.items()}

    report: dict = {"features": FEATURES, "coefficients": coefficients, "intercept": intercept,
                    "cut": cut, "veto_cut": veto,
                    "shipped_veto_cut": veto_cut(train, SIGNALS_COEFFICIENTS,
                                                 SIGNALS_INTERCEPT, threshold=shipped),
                    "fitted_threshold": threshold, "l2": args.l2,
                    "train": table(train)}
    if args.test:
        report["test"] = table(samples_load(args.test))
    print(json.dumps(report, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = parser.add_subparsers(dest="step", required=True)
    dumping = steps.add_parser("dump")
    dumping.add_argument("--beir", required=True, help="the collection whose queries are asked")
    dumping.add_argument("--split", required=True)
    dumping.add_argument("--kb", required=True, help="the base they are asked of")
    dumping.add_argument("--cross", action="store_true",
                         help="the base holds another collection: every query is unanswerable")
    dumping.add_argument("--max-queries", type=int, default=None)
    dumping.add_argument("--seed", type=int, default=13)
    dumping.add_argument("--out", required=True)
    fitting = steps.add_parser("fit")
    fitting.add_argument("--train", nargs="+", required=True)
    fitting.add_argument("--test", nargs="*", default=[])
    fitting.add_argument("--l2", type=float, default=0.001)
    fitting.add_argument("--shipped-threshold", type=float, default=0.20)
    args = parser.parse_args()
    if args.step == "dump":
        dump(args)
    else:
        fit(args)


if __name__ == "__main__":
    main()
