"""The refusal signals of one result list: what, besides the confidence, says whether the
knowledge base holds an answer (design 9.5; answering/refusal.py decides with them).

Computed from the results a caller gets (their clamped cosine `score`, `document_id` and text),
so every retrieval mode measures them alike and they can be measured again from a SearchOutcome:

- top: the result list's confidence (retrieval/pipeline.py), unchanged;
- gap: how far the best document stands above the next one, relative to the best, so that it is
  comparable across queries and embedders whose cosines live on different scales:
  (c1 - c2) / c1, where c1 and c2 are the best cosines of the two best *distinct documents*
  among the results (a note split into chunks does not compete with itself); 1.0 when a single
  document holds every result, 0.0 when c1 is 0;
- support: how many distinct documents among the results have a best cosine of at least
  SUPPORT_RATIO × c1 — the documents that are close to the top (0 without results);
- coverage: the share of the query's key terms found in the result that holds most of them
  (its path, headings and content), terms as the lexical channel analyses them
  (parsing/lexical.py `text_analyze`: stop words dropped, English stemmed, Chinese as
  bigrams); a query word counts once, found when any of its terms is. Third-person pronouns
  (`she`, `his`, `them`: PRONOUNS) are no key words even where the analyser keeps them as
  terms: they stand for someone the question names elsewhere or not at all, and the passage
  that answers "who is the perception lead and where is she based?" is a table row that holds
  no pronoun. Measured on the text, not
  taken from the lexical channel's `matched_share`, so that a vector-only result (or
  RAG_RETRIEVAL=vector) is measured like the others. 0.0 when the query has no key term;
- cjk_share: the share of the query's key words that are Chinese, Japanese or Korean bigrams.
  Not a measure of the results but of how coverage was counted: a question's bigrams that
  straddle two words are rarely found anywhere, so a Chinese question fully answered by a
  passage covers about half of its bigrams where an English one covers most of its words. The
  refusal model weighs coverage by it rather than reading both scales as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

# The analyser's own CJK runs: a key word is a bigram exactly when it was made from one.
from parsing.lexical import _CJK_RUN, text_analyze
from retrieval.types import SearchHit

# Pronouns that parsing/lexical.py's stop words leave in (its list has the first-person and
# plural ones): `us` is not here, as it is also the country.
PRONOUNS = ("he", "she", "him", "her", "his", "hers", "them", "himself", "herself", "themselves")
# The same as the analyser's terms (stemmed: `themselves` is `themselv`).
_PRONOUN_TERMS = frozenset(term for token in text_analyze(text=" ".join(PRONOUNS))
                           for term in token)

# A document "supports" the top one when its best cosine is within 20% of the best: chosen
# before fitting, as the width at which two results are still one answer's competitors.
SUPPORT_RATIO = 0.8


@dataclass(frozen=True)
class RefusalSignals:
    """The signals of one result list for one query (see the module's docstring)."""

    top: float
    gap: float
    support: int
    coverage: float
    cjk_share: float

    def as_dict(self) -> dict[str, Any]:
        return {key: round(value, 6) if isinstance(value, float) else value
                for key, value in asdict(self).items()}


def signals_measure(*, query: str, hits: Sequence[SearchHit],
                    confidence: float) -> RefusalSignals:
    """The refusal signals of `hits` (ranked, as retrieval returned them) for `query`."""
    best: dict[int, float] = {}
    for hit in hits:
        best[hit.document_id] = max(best.get(hit.document_id, 0.0), hit.score)
    ordered = sorted(best.values(), reverse=True)
    first = ordered[0] if ordered else 0.0
    second = ordered[1] if len(ordered) > 1 else 0.0
    gap = (first - second) / first if first > 0 else 0.0
    support = sum(1 for cosine in ordered if cosine >= SUPPORT_RATIO * first) if first > 0 \
        else 0
    words = query_key_words(query)
    coverage = 0.0
    if words:
        for hit in hits:
            terms = _text_terms(_matching_text(hit))
            found = sum(1 for word in words if not word.isdisjoint(terms))
            coverage = max(coverage, found / len(words))
    bigrams = sum(1 for word in words if any(_CJK_RUN.fullmatch(term) for term in word))
    return RefusalSignals(top=confidence, gap=gap, support=support, coverage=coverage,
                          cjk_share=bigrams / len(words) if words else 0.0)


@lru_cache(maxsize=256)
def query_key_words(query: str) -> tuple[frozenset[str], ...]:
    """The query's distinct key words, each as its set of analysed terms (stop words and
    PRONOUNS out)."""
    return tuple(dict.fromkeys(frozenset(token) for token in text_analyze(text=query)
                               if token and not _PRONOUN_TERMS.issuperset(token)))


def _text_terms(text: str) -> frozenset[str]:
    return frozenset(term for token in text_analyze(text=text) for term in token)


def _matching_text(hit: SearchHit) -> str:
    return "\n".join((hit.relative_path, " ".join(hit.heading_path), hit.content))
