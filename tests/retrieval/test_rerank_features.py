"""The features reranker: each signal moves the ranking its way, the score is a pure weighted
sum, exact identifiers beat near misses, and the result never depends on input order.

The behaviour of each signal is checked with every signal weighted (EVERY_SIGNAL): the fitted
weights (FEATURE_WEIGHTS) may give a signal no weight at all where the public collections did not
reward it, which says nothing about whether the signal measures what it should."""

from __future__ import annotations

import dataclasses
import math

import pytest

from retrieval.rerank import (
    FEATURE_WEIGHTS,
    FeatureSignals,
    FeatureWeights,
    RerankCandidate,
    features_score,
    features_signals,
)
from retrieval.rerank.features import FeaturesReranker, query_identifiers, query_terms

FILLER = " ".join(["lorem"] * 30)
# The first hand-set weights: every signal counts, an exact identifier and the cosine most.
EVERY_SIGNAL = FeatureWeights(coverage=0.20, proximity=0.05, identifier=0.35, bm25=0.05,
                              cosine=0.35, fused=0.0)


def candidate(content: str, *, fused_rank: int, chunk_id: int | None = None,
              cosine: float | None = None, bm25: float | None = None,
              heading_path: tuple[str, ...] = (), relative_path: str = "notes/a.md"
              ) -> RerankCandidate:
    return RerankCandidate(chunk_id=chunk_id if chunk_id is not None else fused_rank,
                           content=content, heading_path=heading_path,
                           relative_path=relative_path, fused_rank=fused_rank, cosine=cosine,
                           bm25=bm25)


def order(query: str, candidates: list[RerankCandidate]) -> list[int]:
    """Chunk ids, best first."""
    ranked = FeaturesReranker(EVERY_SIGNAL).rerank(query=query, candidates=candidates)
    return [item.candidate.chunk_id for item in ranked]


def signals(query: str, item: RerankCandidate, *, bm25_max: float = 0.0) -> FeatureSignals:
    return features_signals(query=query, candidate=item, bm25_max=bm25_max)


# --- each feature moves the ranking -----------------------------------------------------------


def test_more_query_terms_covered_ranks_higher():
    query = "export customer invoices"
    partial = candidate("How to export data.", fused_rank=1)
    full = candidate("How to export customer invoices.", fused_rank=2)
    assert signals(query, partial).coverage == pytest.approx(1 / 3)
    assert signals(query, full).coverage == 1.0
    assert order(query, [partial, full]) == [2, 1]


def test_terms_close_together_rank_above_terms_far_apart():
    query = "rotate certificate"
    apart = candidate(f"Rotate the keys. {FILLER} The certificate is new.", fused_rank=1)
    together = candidate(f"Rotate certificate yearly. {FILLER}", fused_rank=2)
    assert signals(query, together).proximity == 1.0
    # "rotate", then "the keys", 30 fillers and "the": the certificate is the 35th word.
    assert signals(query, apart).proximity == pytest.approx(2 / 35)
    assert signals(query, apart).coverage == signals(query, together).coverage == 1.0
    assert order(query, [apart, together]) == [2, 1]


def test_stop_words_between_terms_still_count_as_distance():
    query = "export data"
    assert signals(query, candidate("export the data", fused_rank=1)).proximity == \
        pytest.approx(2 / 3)


def test_one_matched_term_has_no_proximity():
    assert signals("export data", candidate("export only", fused_rank=1)).proximity == 0.0


def test_terms_are_the_lexical_channels_compound_and_parts():
    query = "ERR-1042 timeout"
    assert query_terms(query) == {"err-1042", "err", "1042", "timeout"}
    split = signals(query, candidate("err 1042 timeout", fused_rank=1))
    whole = signals(query, candidate("ERR-1042 timeout", fused_rank=1))
    assert (split.coverage, whole.coverage) == (0.75, 1.0)
    # "err" and "1042" each find the word ERR-1042, right before "timeout".
    assert split.proximity == whole.proximity == 1.0


def test_chinese_is_matched_by_bigrams():
    query = "数据导出"
    together = candidate("如何数据导出", fused_rank=2)
    apart = candidate("数据在这里，然后导出", fused_rank=1)
    assert signals(query, together).coverage == 1.0
    assert signals(query, together).proximity == 1.0
    assert signals(query, apart).coverage == pytest.approx(2 / 3)
    assert order(query, [apart, together]) == [2, 1]


def test_exact_identifier_beats_near_misses():
    query = "What does ERR-1042 mean?"
    near_misses = [candidate("ERR-1043 means the session expired.", fused_rank=1),
                   candidate("ERR-10421 means the session expired.", fused_rank=2),
                   candidate("XERR-1042 means the session expired.", fused_rank=3)]
    exact = candidate("err-1042 means the session expired.", fused_rank=4)
    assert [signals(query, item).identifier for item in near_misses] == [0.0, 0.0, 0.0]
    assert signals(query, exact).identifier == 1.0
    assert order(query, [*near_misses, exact])[0] == 4


@pytest.mark.parametrize("text", ["See ERR-1042.", "(ERR-1042)", "code: err-1042, retry",
                                  "ERR-1042\nnext line"])
def test_identifier_matches_at_punctuation_and_in_any_case(text):
    assert signals("ERR-1042?", candidate(text, fused_rank=1)).identifier == 1.0


def test_identifier_with_a_leading_mark_matches_inside_a_word():
    query = "status of #481"
    assert signals(query, candidate("Fixed in issue#481.", fused_rank=1)).identifier == 1.0
    assert signals(query, candidate("Fixed in issue#4812.", fused_rank=1)).identifier == 0.0


def test_query_identifiers_are_words_with_a_digit_or_mark():
    query = 'Why does "v2.3" fail on node-7 (see #481), not in foo_bar or e-mail: plain?'
    assert query_identifiers(query) == ("v2.3", "node-7", "#481", "foo_bar", "e-mail")
    assert query_identifiers("plain words only") == ()


def test_identifier_share_counts_each_identifier():
    query = "upgrade v2.3 to v2.4"
    assert signals(query, candidate("v2.3 is old", fused_rank=1)).identifier == 0.5


def test_higher_bm25_ranks_higher_relative_to_the_best():
    query = "vacation policy"
    weak = candidate("Vacation policy.", fused_rank=1, bm25=2.0)
    strong = candidate("Vacation policy.", fused_rank=2, bm25=8.0)
    absent = candidate("Vacation policy.", fused_rank=3)
    assert signals(query, weak, bm25_max=8.0).bm25 == 0.25
    assert signals(query, absent, bm25_max=8.0).bm25 == 0.0
    assert order(query, [weak, strong, absent]) == [2, 1, 3]


def test_higher_cosine_ranks_higher_and_is_clamped():
    query = "vacation policy"
    low = candidate("Holidays.", fused_rank=1, cosine=0.2)
    high = candidate("Holidays.", fused_rank=2, cosine=0.7)
    negative = candidate("Holidays.", fused_rank=3, cosine=-0.4)
    lexical_only = candidate("Holidays.", fused_rank=4)
    assert signals(query, negative).cosine == signals(query, lexical_only).cosine == 0.0
    assert order(query, [low, high, negative, lexical_only]) == [2, 1, 3, 4]


def test_headings_and_path_count_as_text():
    query = "payroll deadline"
    in_heading = candidate("Submit by the 25th.", fused_rank=2, heading_path=("Payroll",),
                           relative_path="hr/deadline.md")
    assert signals(query, in_heading).coverage == 1.0
    assert order(query, [candidate("Submit by the 25th.", fused_rank=1), in_heading]) == [2, 1]


# --- the score --------------------------------------------------------------------------------


def test_score_is_the_documented_weighted_sum():
    values = FeatureSignals(coverage=0.5, proximity=0.25, identifier=1.0, bm25=0.2, cosine=0.6,
                            fused=0.8)
    weights = FEATURE_WEIGHTS
    expected = (weights.coverage * 0.5 + weights.proximity * 0.25 + weights.identifier * 1.0
                + weights.bm25 * 0.2 + weights.cosine * 0.6 + weights.fused * 0.8)
    assert features_score(signals=values) == pytest.approx(expected)
    assert features_score(signals=values, weights=EVERY_SIGNAL) == pytest.approx(
        0.20 * 0.5 + 0.05 * 0.25 + 0.35 * 1.0 + 0.05 * 0.2 + 0.35 * 0.6)
    assert math.fsum(dataclasses.astuple(FEATURE_WEIGHTS)) == pytest.approx(1.0)


def test_the_fused_signal_is_the_fusion_score_over_the_best_one():
    items = [RerankCandidate(chunk_id=rank, content="text", heading_path=(),
                             relative_path="a.md", fused_rank=rank, fused_score=score)
             for rank, score in ((1, 0.8), (2, 0.2))]
    ranked = FeaturesReranker(FeatureWeights(coverage=0, proximity=0, identifier=0, bm25=0,
                                             cosine=0, fused=1.0)).rerank(query="text",
                                                                          candidates=items)
    assert [(item.candidate.chunk_id, item.signals["fused"]) for item in ranked] == [
        (1, 1.0), (2, pytest.approx(0.25))]


def test_other_weights_change_the_score_for_tuning():
    values = FeatureSignals(coverage=1.0, proximity=0.0, identifier=0.0, bm25=0.0, cosine=0.0)
    only_cosine = FeatureWeights(coverage=0.0, proximity=0.0, identifier=0.0, bm25=0.0,
                                 cosine=1.0)
    assert features_score(signals=values, weights=only_cosine) == 0.0
    assert features_score(signals=values) == pytest.approx(FEATURE_WEIGHTS.coverage)


def test_reranked_candidates_carry_score_and_signals():
    [item] = FeaturesReranker(EVERY_SIGNAL).rerank(
        query="export invoices", candidates=[candidate("export invoices", fused_rank=1,
                                                       cosine=0.5)])
    assert item.signals == {"coverage": 1.0, "proximity": 1.0, "identifier": 0.0, "bm25": 0.0,
                            "cosine": 0.5, "fused": 0.0}
    assert item.score == pytest.approx(0.20 + 0.05 + 0.35 * 0.5)


# --- determinism ------------------------------------------------------------------------------


def test_same_input_in_any_order_gives_the_same_ranking():
    query = "restart the replica after ERR-17"
    items = [candidate(text, fused_rank=rank, cosine=cosine, bm25=bm25)
             for rank, (text, cosine, bm25) in enumerate([
                 ("Restart the replica.", 0.5, 3.0), ("ERR-17: restart replica", 0.2, None),
                 ("Replica lag explained.", 0.6, 1.0), ("Unrelated.", None, None)], start=1)]
    first = FeaturesReranker(EVERY_SIGNAL).rerank(query=query, candidates=items)
    again = FeaturesReranker(EVERY_SIGNAL).rerank(query=query, candidates=list(reversed(items)))
    assert first == again
    assert [item.candidate.fused_rank for item in first] == [2, 1, 3, 4]


def test_ties_keep_the_fused_order():
    items = [candidate("Same text.", fused_rank=rank, chunk_id=10 - rank) for rank in (3, 1, 2)]
    assert [item.candidate.fused_rank
            for item in FeaturesReranker().rerank(query="same", candidates=items)] == [1, 2, 3]


def test_a_query_of_stop_words_only_scores_by_the_other_signals():
    assert query_terms("how do I do it") == frozenset()
    items = [candidate("Text.", fused_rank=1, cosine=0.1), candidate("Text.", fused_rank=2,
                                                                     cosine=0.9)]
    assert order("how do I do it", items) == [2, 1]
