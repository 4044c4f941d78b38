"""The refusal rule of RAG_REFUSAL: the first release's threshold, exactly, or the signals model
with RAG_MIN_SIMILARITY as an operator's floor; and the `refusal` object of an answer."""

from __future__ import annotations

import dataclasses

import pytest

from access.callers import scope_all
from answering.api_schemas import ask_body
from answering.modes import MODE_NO_ANSWER, MODE_RAG, mode_decide, mode_for
from answering.refusal import (
    REFUSAL_SIGNALS,
    REFUSAL_THRESHOLD,
    SIGNALS_CUT,
    SIGNALS_VETO_CUT,
    refusal_decide,
    refusal_rule,
    signals_grounded,
    signals_probability,
)
from answering.services import AnswerRequest, ask, ask_prepare
from answering.streaming import ask_events
from core.config import get_config
from retrieval.services import search
from retrieval.signals import RefusalSignals, signals_measure
from retrieval.types import RetrievalRequest
from tests.harness import config_changed

# Above the fake provider's 0.20, but the results share no key word with the question and four
# documents are as close to it as the best one: the cosine alone would answer.
CLOSE_BUT_UNSUPPORTED = RefusalSignals(top=0.30, gap=0.02, support=4, coverage=0.0,
                                       cjk_share=0.0)
# Below 0.20 (a bag-of-words cosine across languages is low), but one document stands alone at
# the top and holds most of the question's key words.
LOW_BUT_COVERED = RefusalSignals(top=0.12, gap=1.0, support=1, coverage=0.9, cjk_share=0.0)
IN_DOMAIN = "客户 P1 工单应该怎么升级？"


def config_for(rule: str, **changes):
    return config_changed(get_config(), rag_refusal=rule, **changes)


def decided_mode(signals: RefusalSignals, config) -> str:
    return mode_for(grounded=refusal_decide(signals=signals, config=config).grounded,
                    fallback_requested=False, fallback_enabled=False)


def test_unset_rule_is_signals_only_for_the_provider_it_was_fitted_for() -> None:
    unset = config_changed(get_config(), rag_refusal=None)
    assert unset.embedding_provider == "fake" and refusal_rule(unset) == REFUSAL_SIGNALS
    assert refusal_rule(dataclasses.replace(unset, embedding_provider="local-qwen3")) == (
        REFUSAL_THRESHOLD)
    assert refusal_rule(config_for(REFUSAL_THRESHOLD)) == REFUSAL_THRESHOLD
    assert refusal_rule(dataclasses.replace(config_for(REFUSAL_SIGNALS),
                                            embedding_provider="local-qwen3")) == REFUSAL_SIGNALS


def test_signals_refuse_a_high_cosine_without_key_word_coverage() -> None:
    config = config_for(REFUSAL_SIGNALS)
    assert CLOSE_BUT_UNSUPPORTED.top >= config.threshold
    assert decided_mode(CLOSE_BUT_UNSUPPORTED, config_for(REFUSAL_THRESHOLD)) == MODE_RAG
    assert signals_probability(CLOSE_BUT_UNSUPPORTED) < 0.2
    assert decided_mode(CLOSE_BUT_UNSUPPORTED, config) == MODE_NO_ANSWER


def test_signals_answer_a_low_cosine_that_one_document_covers() -> None:
    config = config_for(REFUSAL_SIGNALS)
    assert LOW_BUT_COVERED.top < config.threshold
    assert decided_mode(LOW_BUT_COVERED, config_for(REFUSAL_THRESHOLD)) == MODE_NO_ANSWER
    assert signals_probability(LOW_BUT_COVERED) > 0.7
    assert decided_mode(LOW_BUT_COVERED, config) == MODE_RAG


def test_signals_do_not_refuse_over_a_doubt_what_the_threshold_answers() -> None:
    """Issue #37: a dev question the base answers (its source ranked 3rd), above the threshold,
    whose key words the results half cover; one cut for both sides refused it."""
    doubtful = RefusalSignals(top=0.2785, gap=0.2318, support=1, coverage=0.4286,
                              cjk_share=0.0)
    config = config_for(REFUSAL_SIGNALS)
    assert SIGNALS_VETO_CUT <= signals_probability(doubtful) < SIGNALS_CUT
    assert decided_mode(doubtful, config_for(REFUSAL_THRESHOLD)) == MODE_RAG
    assert decided_mode(doubtful, config) == MODE_RAG
    # Below the threshold the same doubt is a refusal: only a probable answer rescues a low
    # cosine.
    low = dataclasses.replace(doubtful, top=0.19)
    assert signals_probability(low) < SIGNALS_CUT
    assert decided_mode(low, config) == MODE_NO_ANSWER


@pytest.mark.parametrize("top", [0.0, 0.1, 0.19999, 0.2, 0.3, 0.9])
@pytest.mark.parametrize("probability", [0.0, 0.17999, 0.18, 0.3, 0.40199, 0.402, 1.0])
def test_signals_grounded_takes_the_veto_cut_at_the_threshold_and_the_cut_below(
        top: float, probability: float) -> None:
    expected = probability >= (SIGNALS_VETO_CUT if top >= 0.2 else SIGNALS_CUT)
    assert signals_grounded(probability=probability, top=top, threshold=0.2) is expected


def test_each_signal_moves_the_probability_its_way() -> None:
    base = RefusalSignals(top=0.25, gap=0.3, support=2, coverage=0.5, cjk_share=0.0)
    probability = signals_probability(base)
    for better in (dataclasses.replace(base, top=0.35), dataclasses.replace(base, gap=0.6),
                   dataclasses.replace(base, support=1),
                   dataclasses.replace(base, coverage=0.8)):
        assert signals_probability(better) > probability


def test_an_operators_min_similarity_is_a_floor_under_signals() -> None:
    assert refusal_decide(signals=LOW_BUT_COVERED, config=config_for(REFUSAL_SIGNALS)).grounded
    floored = refusal_decide(signals=LOW_BUT_COVERED,
                             config=config_for(REFUSAL_SIGNALS, rag_min_similarity=0.15))
    assert not floored.grounded and floored.threshold == 0.15
    assert floored.probability == signals_probability(LOW_BUT_COVERED)


@pytest.mark.parametrize("minimum", [None, 0.0, 0.1, 0.35])
@pytest.mark.parametrize("top", [0.0, 0.1, 0.19999, 0.2, 0.3, 0.35, 0.9])
@pytest.mark.parametrize("signals", [CLOSE_BUT_UNSUPPORTED, LOW_BUT_COVERED])
def test_threshold_rule_is_exactly_the_old_decision(minimum, top, signals) -> None:
    config = config_for(REFUSAL_THRESHOLD, rag_min_similarity=minimum)
    signals = dataclasses.replace(signals, top=top)
    refusal = refusal_decide(signals=signals, config=config)
    for requested, enabled, sources in [(False, False, True), (True, True, True),
                                        (True, False, True), (False, False, False)]:
        assert mode_for(grounded=refusal.grounded, fallback_requested=requested,
                        fallback_enabled=enabled, has_sources=sources) == mode_decide(
            confidence=top, threshold=config.threshold, fallback_requested=requested,
            fallback_enabled=enabled, has_sources=sources)
    assert (refusal.rule, refusal.probability, refusal.threshold) == (
        REFUSAL_THRESHOLD, None, config.threshold)


def test_the_answer_reports_how_the_rule_decided(sample_index, config_override) -> None:
    outcome = search(RetrievalRequest(query=IN_DOMAIN, scope=scope_all(), top_k=None),
                     config=get_config())
    signals = signals_measure(query=IN_DOMAIN, hits=outcome.results,
                              confidence=outcome.confidence)
    for rule in (REFUSAL_THRESHOLD, REFUSAL_SIGNALS):
        config = config_override(rag_refusal=rule)
        body = ask_body(ask(AnswerRequest(question=IN_DOMAIN, scope=scope_all(), top_k=None,
                                          fallback=False), config=config), trace_id=None)
        assert body["confidence"] == outcome.confidence
        assert body["refusal"] == refusal_decide(signals=signals, config=config).as_dict()
        assert body["refusal"]["rule"] == rule and body["refusal"]["grounded"] is True
        assert body["refusal"]["signals"]["top"] == round(outcome.confidence, 6)
        assert body["mode"] == MODE_RAG
        events = dict(ask_events(ask_prepare(AnswerRequest(question=IN_DOMAIN, scope=scope_all(),
                                                           top_k=None, fallback=False),
                                             config=config)))
        assert events["retrieval"]["refusal"] == body["refusal"]


def test_signals_refuse_an_out_of_domain_question_the_threshold_refuses(sample_index) -> None:
    question = "明天巴黎天气如何？"
    for rule in (REFUSAL_THRESHOLD, REFUSAL_SIGNALS):
        body = ask_body(ask(AnswerRequest(question=question, scope=scope_all(), top_k=None,
                                          fallback=False), config=config_for(rule)), trace_id=None)
        assert body["mode"] == MODE_NO_ANSWER and body["refusal"]["grounded"] is False
