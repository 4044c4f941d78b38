"""`rag eval`: run the evaluation questions through retrieval and the mode rule, and score them.

Per question: the rank of the first expected source, the confidence and the mode. Overall:
Hit@1, Hit@5, MRR (over in-domain questions), mode accuracy, no_answer precision/recall, the
calibration margin, and a per-threshold table that suggests the threshold separating in-domain
from out-of-domain questions best (the configuration is never changed automatically).

A question may also name `expected_pages` (1-based pages of its expected source, for PDFs): a
result is then a page hit when it comes from an expected source and its page span contains one
of those pages. Per question the rank of the first page hit; overall page Hit@1 and Hit@k over
the questions that have pages. Page hits are reported only: they never fail a question.

A question may also list `answer_contains`: spans of the expected source's text that a right
answer quotes (at most ANSWER_SPANS_MAX, each at most ANSWER_SPAN_MAX_CHARS, for a question of
mode rag). `rag eval` scores retrieval only and does not read them; bench/answer_quality.py
scores the written answers with them.

A question may also give a `reference_answer` (a model answer, at most
REFERENCE_ANSWER_MAX_CHARS): shown to people and checked by the leakage guard of API runs
(evaluation/records.py), never scored.

Per question also `sources` (the top k results' sources, in order) and `complete_hit` (every
expected source among them); overall `hit_at_k` and `complete_hit_at_k` over the in-domain
questions (complete hits over those that name sources).

Added to the report without changing any earlier field: per question its retrieval latency
(`latency_ms`, the search at top_k only) and `ndcg_at_10`; overall nDCG@10 over the in-domain
questions and the latency p50/p95. nDCG@10 needs ten results: with top_k below ten each
in-domain question is searched once more at depth ten for it, so the top_k search, and with it
every other score, stays exactly what it was.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from access.callers import Scope
from answering.modes import MODE_NO_ANSWER, MODE_RAG, mode_for
from answering.refusal import refusal_decide, refusal_rule
from core.config import MAX_TEXT_CHARS, Config
from core.errors import InvalidRequest
from core.safe_yaml import YAMLRefused, yaml_load_plain
from embeddings import EmbeddingProvider, get_embedder
from retrieval.services import search
from retrieval.signals import signals_measure
from retrieval.types import RetrievalRequest, SearchHit, SearchOutcome

THRESHOLD_GRID = [round(step * 0.05, 2) for step in range(1, 20)]
NDCG_DEPTH = 10
REQUIRED_FIELDS = ("id", "question", "expected_mode")
ANSWER_SPANS_MAX = 10
ANSWER_SPAN_MAX_CHARS = 200
REFERENCE_ANSWER_MAX_CHARS = 4000


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    expected_sources: list[str]
    expected_mode: str
    kind: str = ""  # identifier, paraphrase, out_of_domain, …: for per-kind scores
    expected_pages: list[int] = field(default_factory=list)  # 1-based; empty: not page-scored
    answer_contains: list[str] = field(default_factory=list)  # spans a right answer quotes
    reference_answer: str = ""  # a model answer, for people and the leakage guard


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
    ndcg_at_10: float | None = None  # in-domain questions only
    latency_ms: float | None = None  # the top_k search, embedding the question included
    # How RAG_REFUSAL decided (answering/refusal.py): its rule, signals and probability.
    refusal: dict[str, Any] | None = None
    # Every expected source among the top k (in-domain questions with sources only).
    complete_hit: bool | None = None
    sources: list[str] = field(default_factory=list)  # the top k results' sources, in order


def questions_load(*, path: Path) -> list[Question]:
    """Read and check eval/questions.yaml."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidRequest(f"questions file not found: {path}") from None
    return questions_parse(text, source=str(path))


def questions_parse(text: str, *, source: str) -> list[Question]:
    """Parse and check questions in the YAML format of eval/questions.yaml (`source` names the
    text in messages). Every question is checked: the error's message is the first problem,
    details["errors"] lists them all, one line per question at fault."""
    try:
        raw = yaml_load_plain(text)
    except YAMLRefused as exc:
        message = f"{source}: {exc}"
        raise InvalidRequest(message, details={"errors": [message]}) from None
    except yaml.YAMLError as exc:
        message = f"{source} is not valid YAML: {exc}"
        raise InvalidRequest(message, details={"errors": [message]}) from None
    return questions_check(raw.get("questions") if isinstance(raw, dict) else None,
                           source=source)


def questions_check(entries: Any, *, source: str) -> list[Question]:
    """Check a list of questions as read from YAML or JSON (`source` names it in messages);
    every question is checked, details["errors"] lists every problem."""
    if not isinstance(entries, list) or not entries:
        message = f"{source} must hold a non-empty `questions:` list"
        raise InvalidRequest(message, details={"errors": [message]})
    questions, errors = [], []
    for position, entry in enumerate(entries, start=1):
        try:
            questions.append(_question_parse(entry, position=position, source=source))
        except InvalidRequest as exc:
            errors.append(exc.message)
    if errors:
        message = errors[0] if len(errors) == 1 else (
            f"{len(errors)} questions in {source} are invalid; the first: {errors[0]}")
        raise InvalidRequest(message, details={"errors": errors})
    return questions


def _question_parse(entry: Any, *, position: int, source: str) -> Question:
    if not isinstance(entry, dict):
        raise InvalidRequest(f"question #{position} in {source} is not a mapping of fields")
    missing = [name for name in REQUIRED_FIELDS if not str(entry.get(name) or "").strip()]
    label = (f"question {entry['id']} (#{position})" if "id" not in missing
             else f"question #{position} in {source}")
    if missing:
        raise InvalidRequest(f"{label} lacks a field: "
                             + ", ".join(repr(name) for name in missing))
    sources = entry.get("expected_sources") or []
    # A lone string would otherwise become a list of its characters.
    if not isinstance(sources, list):
        raise InvalidRequest(f"{label}: expected_sources must be a list of file paths")
    pages = entry.get("expected_pages") or []
    if not isinstance(pages, list):
        raise InvalidRequest(f"{label}: expected_pages must be a list of page numbers")
    spans = entry.get("answer_contains") or []
    question = Question(id=str(entry["id"]), question=str(entry["question"]),
                        expected_sources=[str(path) for path in sources],
                        expected_mode=str(entry["expected_mode"]),
                        kind=str(entry.get("kind") or ""), expected_pages=list(pages),
                        answer_contains=_answer_spans(spans, label=label),
                        reference_answer=_reference_answer(entry.get("reference_answer"),
                                                           label=label))
    if question.expected_mode not in (MODE_RAG, MODE_NO_ANSWER):
        raise InvalidRequest(f"{label}: expected_mode must be rag or no_answer")
    if len(question.question) > MAX_TEXT_CHARS:  # search would refuse it mid-run
        raise InvalidRequest(f"{label}: the question is longer than {MAX_TEXT_CHARS} characters")
    _expected_pages_check(question)
    if question.answer_contains and question.expected_mode != MODE_RAG:
        raise InvalidRequest(f"{label}: answer_contains needs expected_mode rag")
    return question


def _reference_answer(value: Any, *, label: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > REFERENCE_ANSWER_MAX_CHARS:
        raise InvalidRequest(f"{label}: reference_answer must be a string of at most "
                             f"{REFERENCE_ANSWER_MAX_CHARS} characters")
    return value.strip()


def _answer_spans(spans: Any, *, label: str) -> list[str]:
    """`answer_contains` checked: a bounded list of non-empty strings."""
    if not isinstance(spans, list) or len(spans) > ANSWER_SPANS_MAX or not all(
            isinstance(span, str) and span.strip() and len(span) <= ANSWER_SPAN_MAX_CHARS
            for span in spans):
        raise InvalidRequest(f"{label}: answer_contains must be a list of at most "
                             f"{ANSWER_SPANS_MAX} non-empty strings of at most "
                             f"{ANSWER_SPAN_MAX_CHARS} characters")
    return [span.strip() for span in spans]


def _expected_pages_check(question: Question) -> None:
    if not question.expected_pages:
        return
    if not all(type(page) is int and page >= 1 for page in question.expected_pages):
        raise InvalidRequest(f"question {question.id}: expected_pages must be a list of page "
                             "numbers (integers from 1)")
    if question.expected_mode != MODE_RAG or not question.expected_sources:
        raise InvalidRequest(f"question {question.id}: expected_pages needs expected_mode rag "
                             "and the expected_sources the pages belong to")


def evaluate(*, questions: list[Question], top_k: int, config: Config, scope: Scope,
             progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Score every question against the knowledge bases of `scope`; the report is what
    `rag eval --json` prints. `progress(done, total)` is called before each question."""
    embedder = get_embedder(config=config)
    threshold = config.threshold
    results = []
    for done, question in enumerate(questions):
        if progress is not None:
            progress(done, len(questions))
        results.append(_question_run(question=question, top_k=top_k, config=config,
                                     embedder=embedder, scope=scope))
    return {"threshold": threshold, "threshold_origin": config.threshold_origin,
            "refusal": refusal_rule(config), "top_k": top_k,
            "retrieval": config.rag_retrieval,
            "embedding_provider": config.embedding_provider,
            "embedding_model": config.embedding_model,
            "summary": evaluation_summary(results=results, threshold=threshold, top_k=top_k),
            "thresholds": _threshold_table(results),
            "questions": [asdict(result) for result in results]}


def _question_run(*, question: Question, top_k: int, config: Config,
                  embedder: EmbeddingProvider, scope: Scope) -> QuestionResult:
    started = time.perf_counter()
    outcome = search(RetrievalRequest(query=question.question, scope=scope, top_k=top_k),
                     config=config, embedder=embedder)
    latency_ms = round((time.perf_counter() - started) * 1000, 2)
    ndcg = None
    if question.expected_mode == MODE_RAG:
        ranked = outcome if top_k >= NDCG_DEPTH else search(
            RetrievalRequest(query=question.question, scope=scope, top_k=NDCG_DEPTH),
            config=config, embedder=embedder)
        ndcg = ndcg_at_10(sources=[hit.source for hit in ranked.results],
                          expected=question.expected_sources)
    refusal = refusal_decide(signals=signals_measure(query=question.question,
                                                     hits=outcome.results,
                                                     confidence=outcome.confidence),
                             config=config)
    result = question_score(question=question, outcome=outcome, threshold=config.threshold,
                            grounded=refusal.grounded)
    return dataclasses.replace(result, ndcg_at_10=ndcg, latency_ms=latency_ms,
                               refusal=refusal.as_dict())


def ndcg_at_10(*, sources: list[str], expected: list[str]) -> float:
    """nDCG@10 of a ranked list of result sources, binary relevance: a result is relevant when
    its source is one of `expected`. A source counts once, at its best rank (a note split into
    many chunks would otherwise score above 1); the ideal DCG puts every expected source at
    the top, at most ten of them. `rag eval --ablation` scores its rows with it too."""
    seen: set[str] = set()
    gain = 0.0
    for position, source in enumerate(sources[:NDCG_DEPTH], start=1):
        if source in expected and source not in seen:
            seen.add(source)
            gain += 1 / math.log2(position + 1)
    ideal = sum(1 / math.log2(position + 1)
                for position in range(1, min(len(set(expected)), NDCG_DEPTH) + 1))
    return gain / ideal if ideal else 0.0


def latency_percentile(latencies: list[float], *, share: float) -> float | None:
    """The nearest-rank percentile of `latencies` (share 0.5: p50, 0.95: p95); None when
    empty. Nearest rank, not interpolation: the value is one a question really took."""
    if not latencies:
        return None
    ordered = sorted(latencies)
    return round(ordered[max(1, math.ceil(share * len(ordered))) - 1], 1)


def question_score(*, question: Question, outcome: SearchOutcome, threshold: float,
                   grounded: bool | None = None) -> QuestionResult:
    """Score one question against what retrieval returned for it; `grounded` is what the
    refusal rule decided (answering/refusal.py), the confidence against `threshold` when not
    given."""
    sources = [hit.source for hit in outcome.results]
    rank = next((index for index, source in enumerate(sources, start=1)
                 if source in question.expected_sources), None)
    mode = mode_for(grounded=outcome.confidence >= threshold if grounded is None else grounded,
                    fallback_requested=False, fallback_enabled=False,
                    has_sources=bool(outcome.results))
    passed = mode == question.expected_mode and (
        question.expected_mode != MODE_RAG or rank is not None)
    complete = (set(question.expected_sources) <= set(sources)
                if question.expected_mode == MODE_RAG and question.expected_sources else None)
    return QuestionResult(
        id=question.id, question=question.question, expected_mode=question.expected_mode,
        mode=mode, confidence=outcome.confidence, hit_rank=rank,
        top_sources=list(dict.fromkeys(sources))[:3], passed=passed,
        complete_hit=complete, sources=list(dict.fromkeys(sources)),
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
    completes = [r.complete_hit for r in in_domain if r.complete_hit is not None]
    page_ranks = [r.page_hit_rank for r in in_domain if r.expected_pages]
    ndcgs = [r.ndcg_at_10 for r in in_domain if r.ndcg_at_10 is not None]
    latencies = [r.latency_ms for r in results if r.latency_ms is not None]
    refusals = _decided_refusal_scores(results)
    lowest_in = min((r.confidence for r in in_domain), default=None)
    highest_out = max((r.confidence for r in out_domain), default=None)
    return {
        "questions": len(results),
        "passed": sum(r.passed for r in results),
        "failed": [r.id for r in results if not r.passed],
        "hit_at_1": _ratio(sum(rank == 1 for rank in ranks), len(ranks)),
        "hit_at_5": _ratio(sum(rank is not None and rank <= 5 for rank in ranks), len(ranks)),
        "mrr": _ratio(sum(1 / rank for rank in ranks if rank), len(ranks)),
        # Within the top k (every result): one expected source, and every one of them.
        "hit_at_k": _ratio(sum(rank is not None and rank <= top_k for rank in ranks), len(ranks)),
        "complete_hit_at_k": _ratio(sum(completes), len(completes)),
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
        "ndcg_at_10": _ratio(sum(ndcgs), len(ndcgs)),
        "latency_p50_ms": latency_percentile(latencies, share=0.5),
        "latency_p95_ms": latency_percentile(latencies, share=0.95),
    }


def _decided_refusal_scores(results: list[QuestionResult]) -> dict[str, float | None]:
    """Precision and recall of the refusals the rule made (mode no_answer), whichever rule."""
    refused = [r for r in results if r.mode == MODE_NO_ANSWER]
    correct = sum(r.expected_mode == MODE_NO_ANSWER for r in refused)
    return {"precision": _ratio(correct, len(refused)),
            "recall": _ratio(correct, sum(r.expected_mode == MODE_NO_ANSWER for r in results))}


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
    rows: list[dict[str, Any]] = []
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
