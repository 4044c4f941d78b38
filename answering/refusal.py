"""Whether retrieval found enough to answer from: the refusal rule of RAG_REFUSAL.

- `threshold` (the first release's rule, exactly): answer when the confidence reaches
  `config.threshold` (RAG_MIN_SIMILARITY, or the embedding provider's default).
- `signals` (design 9.5): a logistic model of "the knowledge base holds the answer" over the
  refusal signals of the results (retrieval/signals.py: the confidence, the gap between the two
  best documents, how many documents are close to the top, the key-term coverage, weighed per
  script). A confidence that reaches the threshold is answered unless the model is nearly sure
  the results miss (its probability below SIGNALS_VETO_CUT); a lower one is answered when the
  probability reaches SIGNALS_CUT. A doubt alone no longer refuses what the threshold answers
  (with one cut for both, the model refused answerable questions the threshold answered: issue
  #37), and a low cosine that one document covers is still answered.
  RAG_MIN_SIMILARITY, when an operator sets it, stays a floor under this rule too: a
  confidence below it is refused whatever the other signals say.

RAG_REFUSAL unset picks `signals` for the embedding providers the model was fitted for
(SIGNALS_PROVIDERS) and `threshold` for the others: the model reads cosines on the scale of the
embedder it was fitted with. The `confidence` the API reports is the same number under both
rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from core.config import Config
from retrieval.signals import RefusalSignals

REFUSAL_THRESHOLD = "threshold"
REFUSAL_SIGNALS = "signals"
# The embedding providers the signals model below was fitted for: RAG_REFUSAL's default there.
# Another provider keeps the threshold until bench/fit_refusal.py has been run with it.
SIGNALS_PROVIDERS = ("fake",)

# The model's weights, in the order of `signals_features`, and its intercept: fitted by
# bench/fit_refusal.py (class-balanced logistic regression) with the fake embedder on the
# train/dev splits of scifact, nfcorpus and cmrc2018-train, each collection's queries asked of
# its own base (answerable when a relevant document is in the top 5) and of the other
# collections' bases (unanswerable); never on a test split (docs/benchmarks.md has the table).
# top, gap, 1/support, coverage, cjk_share, cjk_share × coverage:
SIGNALS_COEFFICIENTS = (3.765, 0.269, 0.601, 5.147, 0.1, 3.695)
SIGNALS_INTERCEPT = -4.567
# Below the threshold: the probability at which the fit's answerable train queries are
# answered as often as under the fake provider's threshold of 0.20 (92.8%).
SIGNALS_CUT = 0.402
# At the threshold or above: the highest cut (0.01 steps) that refuses no answerable question
# the threshold answers among the dev questions (bench/fit_refusal.py `veto_cut`: SciFact train
# claims of their own base and of the sample vaults' bases, and the dev split of
# eval/refusal-questions.yaml), where the lowest such probability is 0.188.
SIGNALS_VETO_CUT = 0.18


@dataclass(frozen=True)
class Refusal:
    """How the rule decided: what an answer's optional `refusal` object reports."""

    rule: str
    grounded: bool  # the rule found enough to answer from
    signals: RefusalSignals
    probability: float | None  # the signals model's, None under `threshold`
    threshold: float | None  # the confidence the rule requires (a floor under `signals`)

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "grounded": self.grounded, "signals": self.signals.as_dict(),
                "probability": (round(self.probability, 6) if self.probability is not None
                                else None),
                "threshold": self.threshold}


def signals_features(signals: RefusalSignals) -> tuple[float, ...]:
    """The model's inputs, each in 0..1: top, gap, 1/support (1 for a lone close document),
    coverage, and the CJK share alone and times coverage (coverage's slope for bigrams)."""
    return (signals.top, signals.gap, 1.0 / signals.support if signals.support else 0.0,
            signals.coverage, signals.cjk_share, signals.cjk_share * signals.coverage)


def signals_probability(signals: RefusalSignals) -> float:
    """The model's probability that the results hold the answer."""
    value = SIGNALS_INTERCEPT + sum(weight * feature for weight, feature in zip(
        SIGNALS_COEFFICIENTS, signals_features(signals), strict=True))
    return 1 / (1 + math.exp(-max(-50.0, min(50.0, value))))


def signals_grounded(*, probability: float, top: float, threshold: float) -> bool:
    """The `signals` rule's decision: a confidence `top` that reaches `threshold` unless the
    model's `probability` is below SIGNALS_VETO_CUT, a lower one when it reaches SIGNALS_CUT."""
    return probability >= (SIGNALS_VETO_CUT if top >= threshold else SIGNALS_CUT)


def refusal_rule(config: Config) -> str:
    """RAG_REFUSAL when set, else the rule fitted for the embedding provider."""
    if config.rag_refusal is not None:
        return config.rag_refusal
    return (REFUSAL_SIGNALS if config.embedding_provider in SIGNALS_PROVIDERS
            else REFUSAL_THRESHOLD)


def refusal_decide(*, signals: RefusalSignals, config: Config) -> Refusal:
    """Whether the results of `signals` are enough to answer from, under RAG_REFUSAL."""
    if refusal_rule(config) == REFUSAL_THRESHOLD:
        return Refusal(rule=REFUSAL_THRESHOLD, grounded=signals.top >= config.threshold,
                       signals=signals, probability=None, threshold=config.threshold)
    probability = signals_probability(signals)
    floor = config.rag_min_similarity
    grounded = (signals_grounded(probability=probability, top=signals.top,
                                 threshold=config.threshold)
                and (floor is None or signals.top >= floor))
    return Refusal(rule=REFUSAL_SIGNALS, grounded=grounded, signals=signals,
                   probability=probability, threshold=floor)
