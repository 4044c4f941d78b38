"""A query as the lexical channel reads it: its distinct analysed terms (the same analyzer as the
chunks, parsing/lexical.py), the parts of those that are identifiers, and the adjacent pairs of
whole tokens that earn the phrase bonus (retrieval/lexical.py)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from parsing.lexical import text_analyze

# A long question would otherwise cost one document-frequency count per bigram; the first terms
# of a query carry it.
MAX_QUERY_TERMS = 64
# The substring lookup of an identifier needs a piece of this many letters or digits: shorter
# pieces (`v2.3.1`) are tokens in most chunks, and the lookup would read them all. Such an
# identifier is still found exactly through its own term.
TRIGRAM_RUN = 3


@dataclass(frozen=True)
class LexicalQuery:
    terms: list[str]
    identifier_parts: list[str | None]  # an identifier's parts, space-separated; else None
    pair_left: list[str]
    pair_right: list[str]


def lexical_query_terms(query: str) -> list[str]:
    """The distinct analysed terms of `query`, in order of first appearance."""
    return query_parse(query).terms


def query_parse(query: str) -> LexicalQuery:
    """Distinct terms (the first MAX_QUERY_TERMS), the parts of those that are identifiers, and
    the adjacent pairs of whole tokens in query order (a compound's parts share its position,
    so only the wholes pair up; a stop word between two words keeps them apart)."""
    tokens = text_analyze(text=query)
    terms = list(dict.fromkeys(term for position_terms in tokens
                               for term in position_terms))[:MAX_QUERY_TERMS]
    identifier_parts = {position_terms[0]: " ".join(position_terms[1:])
                        for position_terms in tokens if is_identifier(position_terms)}
    kept = set(terms)
    pairs: list[tuple[str, str]] = []
    for before, after in pairwise(tokens):
        if not before or not after:
            continue
        pair = (before[0], after[0])
        if pair not in pairs and pair[0] in kept and pair[1] in kept:
            pairs.append(pair)
    return LexicalQuery(terms=terms,
                         identifier_parts=[identifier_parts.get(term) for term in terms],
                         pair_left=[left for left, _ in pairs],
                         pair_right=[right for _, right in pairs])


def is_identifier(position_terms: tuple[str, ...]) -> bool:
    """Whether a whole token is an identifier worth a substring lookup: joined by connectors
    (so 3+ characters), with a piece of 3+ characters. A token without a connector
    (`1042`, `err1042`) is one run of letters and digits, which text can only hold as that same
    term or inside a longer run, where a substring lookup with word boundaries finds nothing
    more."""
    return (len(position_terms) > 1 and len(position_terms[0]) >= 3
            and any(len(part) >= TRIGRAM_RUN for part in position_terms[1:]))
