"""Answers in an evaluation run (when it asks for them): each question is answered as POST /ask
answers it, and scored for correctness against its `answer_contains` spans, with the tokens it
took and their cost at RAG_MODEL_PRICES."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from access.callers import Scope
from answering.services import AnswerRequest, ask_answer, ask_prepare
from core.config import Config
from core.errors import LocalRagError
from core.prices import llm_cost
from evaluation.questions import Question

# Markdown emphasis and code marks: a span quoted as **T+30 分钟** is still the span.
_MARKS = re.compile(r"[*`_]")


def _plain(text: str) -> str:
    return " ".join(_MARKS.sub("", text).split()).lower()


def answer_correct(*, answer: str, spans: list[str]) -> bool | None:
    """Whether the answer holds every span (case, whitespace and emphasis aside); None for a
    question without spans."""
    if not spans:
        return None
    plain = _plain(answer)
    return all(_plain(span) in plain for span in spans)


def answers_score(*, questions: list[Question], scope: Scope, top_k: int, config: Config,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, dict[str, Any]]:
    """Each question's answer, by question id: {answer_mode, answer_correct, prompt_tokens,
    completion_tokens, cost, answer_latency_ms} or {answer_error} when it could not be
    answered (the other questions still are)."""
    rows: dict[str, dict[str, Any]] = {}
    for done, question in enumerate(questions):
        if progress is not None:
            progress(done, len(questions))
        started = time.perf_counter()
        try:
            plan = ask_prepare(AnswerRequest(question=question.question, scope=scope,
                                             top_k=top_k), config=config)
            answer = ask_answer(plan, config=config)
        except LocalRagError as exc:
            rows[question.id] = {"answer_error": exc.code}
            continue
        tokens = plan.tokens()
        model = plan.measures.llm_model if plan.measures is not None else None
        rows[question.id] = {
            "answer_mode": answer.mode,
            "answer_correct": answer_correct(answer=answer.answer,
                                             spans=question.answer_contains),
            "prompt_tokens": tokens["prompt_tokens"],
            "completion_tokens": tokens["completion_tokens"],
            "cost": llm_cost(prices=config.rag_model_prices, model=model,
                             prompt_tokens=tokens["prompt_tokens"],
                             completion_tokens=tokens["completion_tokens"]),
            "answer_latency_ms": round((time.perf_counter() - started) * 1000, 2)}
    return rows


def answers_summary(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The run's answer scores: correctness over the questions with spans, tokens in and out,
    and the cost, null when any answer that used a model has no price (unknown, not free)."""
    scored = [row["answer_correct"] for row in rows.values()
              if row.get("answer_correct") is not None]
    used_model = [row for row in rows.values()
                  if row.get("prompt_tokens") is not None or row.get("completion_tokens")]
    costs = [row.get("cost") for row in used_model]
    currencies = {cost["currency"] for cost in costs if cost is not None}
    cost = None
    if costs and None not in costs and len(currencies) == 1:
        cost = {"amount": round(sum(c["amount"] for c in costs if c is not None), 8),
                "currency": currencies.pop()}
    return {
        "answered": sum("answer_error" not in row for row in rows.values()),
        "answer_errors": sum("answer_error" in row for row in rows.values()),
        "answer_questions": len(scored),
        "answer_correct": round(sum(scored) / len(scored), 4) if scored else None,
        "prompt_tokens": sum(row.get("prompt_tokens") or 0 for row in rows.values()),
        "completion_tokens": sum(row.get("completion_tokens") or 0 for row in rows.values()),
        "cost": cost,
    }
