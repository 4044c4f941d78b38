"""`rag eval`: run the evaluation questions through retrieval and the mode rule, and score them.

Per question: the rank of the first expected source, the confidence and the mode. Overall:
Hit@1, Hit@5, MRR (over in-domain questions), mode accuracy, no_answer precision/recall, the
calibration margin, and a per-threshold table that suggests the threshold separating in-domain
from out-of-domain questions best (the configuration is never changed automatically).

A question may also name `expected_pages` (1-based pages of its expected source, for PDFs): a
result is then a page hit when it comes from an expected source and its page span contains one
of those pages. Per question the rank of the first page hit; overall page Hit@1 and Hit@k over
the questions that have pages. Page hits are reported only: they never fail a question.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from answering.modes import MODE_NO_ANSWER, MODE_RAG, mode_decide
from core.config import Config
from core.errors import InvalidRequest
from knowledge.access import Scope
from knowledge.embeddings import get_embedder
from retrieval.services import search
from retrieval.types import SearchHit, SearchOutcome

THRESHOLD_GRID = [round(step * 0.05, 2) for step in range(1, 20)]


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    expected_sources: list[str]
    expected_mode: str
    kind: str = ""  # identifier, paraphrase, out_of_domain, …: for per-kind scores
    expected_pages: list[int] = field(default_factory=list)  # 1-based; empty: not page-scored


@dataclass(frozen=True)
class QuestionResult:
    id: str
    question: str
    expected_mode: str
    mode: str
    confidence: float
    hit_rank: int | None  # 1-based rank of the first expected source, None when absent
    top_sources: list[str]
    passed: bool
    expected_pages: list[int] = field(default_factory=list)
    page_hit_rank: int | None = None  # 1-based rank of the first page hit, None when absent


def questions_load(*, path: Path) -> list[Question]:
    """Read and check eval/questions.yaml."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidRequest(f"questions file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise InvalidRequest(f"questions file is not valid YAML: {exc}") from None
    entries = raw.get("questions") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InvalidRequest(f"{path} must hold a non-empty `questions:` list")
    questions = []
    for position, entry in enumerate(entries, start=1):
        try:
            question = Question(id=str(entry["id"]), question=str(entry["question"]),
                                expected_sources=list(entry.get("expected_sources") or []),
                                expected_mode=str(entry["expected_mode"]),
                                kind=str(entry.get("kind") or ""),
                                expected_pages=list(entry.get("expected_pages") or []))
        except (KeyError, TypeError) as exc:
            raise InvalidRequest(f"question #{position} in {path} lacks a field: {exc}") from None
        if question.expected_mode not in (MODE_RAG, MODE_NO_ANSWER):
            raise InvalidRequest(f"question {question.id}: expected_mode must be rag or no_answer")
        _expected_pages_check(question)
        questions.append(question)
    return questions


def _expected_pages_check(question: Question) -> None:
    if not question.expected_pages:
        return
    if not all(type(page) is int and page >= 1 for page in question.expected_pages):
        raise InvalidRequest(f"question {question.id}: expected_pages must be a list of page "
                             "numbers (integers from 1)")
    if question.expected_mode != MODE_RAG or not question.expected_sources:
        raise InvalidRequest(f"question {question.id}: expected_pages needs expected_mode rag "
                             "and the expected_sources the pages belong to")


def evaluate(*, questions: list[Question], top_k: int, config: Config,
             scope: Scope) -> dict[str, Any]:
    """Score every question against the knowledge bases of `scope`; the report is what
    `rag eval --json` prints."""
    embedder = get_embedder(config=config)
    threshold = config.threshold
    results = [question_score(question=question, threshold=threshold,
                              outcome=search(query=question.question, top_k=top_k,
                                             config=config, embedder=embedder, scope=scope))
               for question in questions]
    return {"threshold": threshold, "threshold_origin": config.threshold_origin, "top_k": top_k,
            "embedding_provider": config.embedding_provider,
            "embedding_model": config.embedding_model,
            "summary": evaluation_summary(results=results, threshold=threshold, top_k=top_k),
            "thresholds": _threshold_table(results),
            "questions": [asdict(result) for result in results]}


def question_score(*, question: Question, outcome: SearchOutcome,
                   threshold: float) -> QuestionResult:
    """Score one question against what retrieval returned for it."""
    sources = [hit.source for hit in outcome.results]
    rank = next((index for index, source in enumerate(sources, start=1)
                 if source in question.expected_sources), None)
    mode = mode_decide(confidence=outcome.confidence, threshold=threshold,
                       fallback_requested=False, fallback_enabled=False,
                       has_sources=bool(outcome.results))
    passed = mode == question.expected_mode and (
        question.expected_mode != MODE_RAG or rank is not None)
    return QuestionResult(
        id=question.id, question=question.question, expected_mode=question.expected_mode,
        mode=mode, confidence=outcome.confidence, hit_rank=rank,
        top_sources=list(dict.fromkeys(sources))[:3], passed=passed,
        expected_pages=list(question.expected_pages),
        page_hit_rank=page_hit_rank(hits=outcome.results, sources=question.expected_sources,
                                    pages=question.expected_pages))


def page_hit_rank(*, hits: list[SearchHit], sources: list[str], pages: list[int]) -> int | None:
    """1-based rank of the first hit from one of `sources` whose page span contains one of
    `pages`; None when there is none. Hits without a span (notes, DOCX, TXT) never match."""
    for rank, hit in enumerate(hits, start=1):
        if hit.source not in sources or hit.page_start is None:
            continue
        last = hit.page_end if hit.page_end is not None else hit.page_start
        if any(hit.page_start <= page <= last for page in pages):
            return rank
    return None


def evaluation_summary(*, results: list[QuestionResult], threshold: float,
                       top_k: int) -> dict[str, Any]:
    """The `summary` of the report: the overall scores of the scored questions."""
    in_domain = [r for r in results if r.expected_mode == MODE_RAG]
    out_domain = [r for r in results if r.expected_mode == MODE_NO_ANSWER]
    ranks = [r.hit_rank for r in in_domain]
    page_ranks = [r.page_hit_rank for r in in_domain if r.expected_pages]
    refusals = _refusal_scores(results, threshold)
    lowest_in = min((r.confidence for r in in_domain), default=None)
    highest_out = max((r.confidence for r in out_domain), default=None)
    return {
        "questions": len(results),
        "passed": sum(r.passed for r in results),
        "failed": [r.id for r in results if not r.passed],
        "hit_at_1": _ratio(sum(rank == 1 for rank in ranks), len(ranks)),
        "hit_at_5": _ratio(sum(rank is not None and rank <= 5 for rank in ranks), len(ranks)),
        "mrr": _ratio(sum(1 / rank for rank in ranks if rank), len(ranks)),
        "mode_accuracy": _ratio(sum(r.mode == r.expected_mode for r in results), len(results)),
        "no_answer_precision": refusals["precision"],
        "no_answer_recall": refusals["recall"],
        "lowest_in_domain_confidence": lowest_in,
        "highest_out_of_domain_confidence": highest_out,
        "calibration_margin": (lowest_in - highest_out
                               if lowest_in is not None and highest_out is not None else None),
        "page_questions": len(page_ranks),
        "page_hit_at_1": _ratio(sum(rank == 1 for rank in page_ranks), len(page_ranks)),
        "page_hit_at_k": _ratio(sum(rank is not None and rank <= top_k for rank in page_ranks),
                                len(page_ranks)),
    }


def _refusal_scores(results: list[QuestionResult], threshold: float) -> dict[str, float | None]:
    return refusal_scores(decided=[(r.expected_mode, r.confidence) for r in results],
                          threshold=threshold)


def refusal_scores(*, decided: list[tuple[str, float]],
                   threshold: float) -> dict[str, float | None]:
    """Precision and recall of refusing (confidence below `threshold`) the questions whose
    expected mode is no_answer; `decided` holds (expected mode, confidence) pairs."""
    refused = [expected for expected, confidence in decided if confidence < threshold]
    should_refuse = sum(expected == MODE_NO_ANSWER for expected, _ in decided)
    correct = sum(expected == MODE_NO_ANSWER for expected in refused)
    return {"precision": _ratio(correct, len(refused)), "recall": _ratio(correct, should_refuse)}


def _threshold_table(results: list[QuestionResult]) -> dict[str, Any]:
    rows = []
    for threshold in THRESHOLD_GRID:
        refusals = _refusal_scores(results, threshold)
        correct = sum((r.confidence >= threshold) == (r.expected_mode == MODE_RAG)
                      for r in results)
        rows.append({"threshold": threshold, "mode_accuracy": _ratio(correct, len(results)),
                     "no_answer_precision": refusals["precision"],
                     "no_answer_recall": refusals["recall"]})
    in_domain = [r.confidence for r in results if r.expected_mode == MODE_RAG]
    out_domain = [r.confidence for r in results if r.expected_mode == MODE_NO_ANSWER]
    if in_domain and out_domain and min(in_domain) > max(out_domain):
        suggested = round((min(in_domain) + max(out_domain)) / 2, 3)
        reason = "midpoint between the highest out-of-domain and the lowest in-domain confidence"
    else:
        best = max(rows, key=lambda row: (row["mode_accuracy"] or 0, -row["threshold"]))
        suggested, reason = best["threshold"], "highest mode accuracy (classes overlap)"
    return {"rows": rows, "suggested": suggested, "reason": reason}


def _ratio(part: float, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None
