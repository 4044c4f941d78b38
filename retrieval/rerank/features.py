"""The `features` reranker: a deterministic score from six signals, no model, no network.

Each signal is in 0..1 and the weights sum to 1, so a score is in 0..1:

- coverage: the share of the query's distinct terms found in the chunk (its path, headings and
  content), terms as the lexical channel makes them (parsing/lexical.py: `ERR-1042` gives
  `err-1042`, `err` and `1042`; Chinese gives bigrams), leaving out the query's most common
  English function words, which say nothing about a chunk;
- proximity: how close together the query's words are in the chunk: matched query words /
  length in tokens of the shortest stretch that holds each of them (1.0 when they are adjacent;
  0 when fewer than two match, so a one-word query is ranked by the other signals); a query word
  is found at a token sharing any of its terms;
- identifier: the share of the query's identifiers (a query word with a digit or one of
  ``-_./:#``, e.g. ``ERR-1042``, ``v2.3``, ``#481``) found verbatim in the chunk, ignoring case
  and never inside a longer word or number (``ERR-10421`` does not match ``ERR-1042``);
- bm25: the chunk's BM25 score over the best BM25 among the candidates (0 when the lexical
  channel did not find it);
- cosine: the cosine with the query, clamped to 0..1 (0 when the vector channel did not find it);
- fused: the fusion's score over the best fusion score among the candidates (0 without fusion),
  so the reranker starts from what fusion already knows and moves only what the other signals
  are sure of.

`term_coverage` as computed by the lexical channel is not used: coverage and proximity come from
the same matching here, so a chunk found only by the vector channel is measured like the others.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

from parsing.lexical import text_tokenize
from retrieval.rerank.base import RerankCandidate, RerankedCandidate, ranked_by_score

# The weights of the score, fitted by bench/fit_retrieval.py (coordinate ascent on nDCG@10,
# seed 13) with the fake embedder on the train/dev splits of three public collections with human
# judgments, never on a test split (docs/benchmarks.md has the table). The fit leans on the fused
# score: the other signals add little that fusion does not already know, which is why no
# provider defaults to this reranker.
COVERAGE_WEIGHT = 0.08
PROXIMITY_WEIGHT = 0.0
IDENTIFIER_WEIGHT = 0.02
BM25_WEIGHT = 0.05
COSINE_WEIGHT = 0.11
FUSED_WEIGHT = 0.74

IDENTIFIER_MARKS = "-_./:#"
_LEADING_PUNCTUATION = "\"'`([{<"
_TRAILING_PUNCTUATION = "\"'`)]}>,;!?.:"
# Query words that count for neither coverage nor proximity: every chunk has them.
_STOPWORDS = frozenset(("a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does",
                        "for", "from", "how", "i", "in", "is", "it", "of", "on", "or", "that",
                        "the", "this", "to", "was", "what", "when", "where", "which", "who",
                        "why", "will", "with", "you", "your", "my", "we", "our", "me"))


@dataclass(frozen=True)
class FeatureWeights:
    """The weight of each signal in `features_score`."""

    coverage: float = COVERAGE_WEIGHT
    proximity: float = PROXIMITY_WEIGHT
    identifier: float = IDENTIFIER_WEIGHT
    bm25: float = BM25_WEIGHT
    cosine: float = COSINE_WEIGHT
    fused: float = FUSED_WEIGHT


FEATURE_WEIGHTS = FeatureWeights()


@dataclass(frozen=True)
class FeatureSignals:
    """The six signals of one candidate for one query, each in 0..1."""

    coverage: float
    proximity: float
    identifier: float
    bm25: float
    cosine: float
    fused: float = 0.0


def features_score(*, signals: FeatureSignals, weights: FeatureWeights = FEATURE_WEIGHTS
                   ) -> float:
    """The weighted sum of the signals (pure: the same inputs always give the same score)."""
    return (weights.coverage * signals.coverage + weights.proximity * signals.proximity
            + weights.identifier * signals.identifier + weights.bm25 * signals.bm25
            + weights.cosine * signals.cosine + weights.fused * signals.fused)


def features_signals(*, query: str, candidate: RerankCandidate, bm25_max: float,
                     fused_max: float = 0.0) -> FeatureSignals:
    """The signals of `candidate` for `query`; `bm25_max` and `fused_max` are the best BM25
    and fusion score among the candidates reranked together (0 when none has one)."""
    terms = query_terms(query)
    owners = _term_owners(query)
    text = _matching_text(candidate)
    found_terms: set[str] = set()
    # word index -> positions where it is found. Positions count every token, function words
    # included: "export the data" is not adjacent.
    positions: dict[int, list[int]] = {}
    for position, token in enumerate(text_tokenize(text=text)):
        words = {word for term in token for word in owners.get(term, ())}
        found_terms.update(term for term in token if term in owners)
        for word in words:
            positions.setdefault(word, []).append(position)
    coverage = len(found_terms) / len(terms) if terms else 0.0
    identifiers = query_identifiers(query)
    folded = unicodedata.normalize("NFKC", text).casefold()
    found = sum(1 for identifier in identifiers if _identifier_pattern(identifier).search(folded))
    bm25 = candidate.bm25 / bm25_max if candidate.bm25 and bm25_max > 0 else 0.0
    cosine = candidate.cosine if candidate.cosine is not None else 0.0
    fused = (candidate.fused_score / fused_max
             if candidate.fused_score is not None and fused_max > 0 else 0.0)
    return FeatureSignals(coverage=coverage, proximity=_proximity(positions),
                          identifier=found / len(identifiers) if identifiers else 0.0,
                          bm25=_clamped(bm25), cosine=_clamped(cosine), fused=_clamped(fused))


class FeaturesReranker:
    """Scores every candidate by `features_score` with `weights` (the fitted FEATURE_WEIGHTS
    unless given); ties keep the fused order."""

    name = "features"

    def __init__(self, weights: FeatureWeights = FEATURE_WEIGHTS) -> None:
        self.weights = weights

    def rerank(self, *, query: str,
               candidates: Sequence[RerankCandidate]) -> list[RerankedCandidate]:
        """Every candidate, best features score first."""
        bm25_max = max((candidate.bm25 for candidate in candidates if candidate.bm25), default=0.0)
        fused_max = max((candidate.fused_score for candidate in candidates
                         if candidate.fused_score), default=0.0)
        scored = []
        for candidate in candidates:
            signals = features_signals(query=query, candidate=candidate, bm25_max=bm25_max,
                                       fused_max=fused_max)
            scored.append(RerankedCandidate(candidate=candidate,
                                            score=features_score(signals=signals,
                                                                 weights=self.weights),
                                            signals=asdict(signals)))
        return ranked_by_score(scored)


@lru_cache(maxsize=256)
def query_words(query: str) -> tuple[frozenset[str], ...]:
    """The distinct words of a query, each as its set of terms, without function words."""
    wholes = dict.fromkeys(token for token in text_tokenize(text=query)
                           if token[0] not in _STOPWORDS)
    return tuple(frozenset(token) for token in wholes)


@lru_cache(maxsize=256)
def query_terms(query: str) -> frozenset[str]:
    """The distinct terms of a query's words (what coverage counts)."""
    return frozenset(term for word in query_words(query) for term in word)


@lru_cache(maxsize=256)
def _term_owners(query: str) -> dict[str, tuple[int, ...]]:
    """term -> the indexes of the query words that hold it."""
    owners: dict[str, list[int]] = {}
    for index, word in enumerate(query_words(query)):
        for term in word:
            owners.setdefault(term, []).append(index)
    return {term: tuple(indexes) for term, indexes in owners.items()}


@lru_cache(maxsize=256)
def query_identifiers(query: str) -> tuple[str, ...]:
    """The query's identifiers, case folded: words with a digit or one of -_./:# once the
    punctuation around them (quotes, brackets, a sentence's end) is stripped."""
    found = []
    for word in unicodedata.normalize("NFKC", query).split():
        word = word.lstrip(_LEADING_PUNCTUATION).rstrip(_TRAILING_PUNCTUATION)
        if (any(char.isdigit() or char in IDENTIFIER_MARKS for char in word)
                and any(char.isalnum() for char in word)):
            found.append(word.casefold())
    return tuple(dict.fromkeys(found))


def identifiers_found_share(*, query: str, text: str) -> float | None:
    """The share of the query's identifiers found verbatim (case-folded) in `text`; None when
    the query has none."""
    identifiers = query_identifiers(query)
    if not identifiers:
        return None
    folded = unicodedata.normalize("NFKC", text).casefold()
    return sum(bool(_identifier_pattern(identifier).search(folded))
               for identifier in identifiers) / len(identifiers)


@lru_cache(maxsize=256)
def _identifier_pattern(identifier: str) -> re.Pattern[str]:
    # Verbatim, but not as part of a longer word or number: ERR-1042 is not in ERR-10421.
    before = r"(?<![^\W_])" if identifier[0].isalnum() else ""
    after = r"(?![^\W_])" if identifier[-1].isalnum() else ""
    return re.compile(before + re.escape(identifier) + after)


def _matching_text(candidate: RerankCandidate) -> str:
    return "\n".join((candidate.relative_path, " ".join(candidate.heading_path),
                      candidate.content))


def _proximity(positions: dict[int, list[int]]) -> float:
    """Matched query words over the length of the shortest window holding one of each."""
    if len(positions) < 2:
        return 0.0
    events = sorted((position, word) for word, found in positions.items() for position in found)
    counts: dict[int, int] = {}
    shortest = events[-1][0] - events[0][0] + 1
    start = 0
    for position, word in events:
        counts[word] = counts.get(word, 0) + 1
        while len(counts) == len(positions):
            first, first_word = events[start]
            shortest = min(shortest, position - first + 1)
            counts[first_word] -= 1
            if not counts[first_word]:
                del counts[first_word]
            start += 1
    # One token can hold two query words (`err-1042` for "ERR-1042 err"): at most 1.
    return min(1.0, len(positions) / shortest)


def _clamped(value: float) -> float:
    return max(0.0, min(1.0, value))
