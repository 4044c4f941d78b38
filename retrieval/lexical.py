"""The lexical channel: BM25 over the chunks' stored terms, computed inside PostgreSQL.

The query goes through the same analyzer as the chunks (knowledge/lexical.py: stems, stop
words, identifiers whole). Its distinct
terms select candidates through the GIN index on chunks.lexical_terms; identifiers also select,
through the trigram index, chunks whose text splits them differently. The ranking itself is
retrieval/sql.py LEXICAL_SEARCH (formula there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import psycopg

from core.db import db_errors_translated
from core.errors import InvalidRequest
from knowledge.lexical import text_analyze
from knowledge.schema import index_connection
from retrieval import sql

# A long question would otherwise cost one document-frequency count per bigram; the first terms
# of a query carry it.
MAX_QUERY_TERMS = 64
# The substring lookup of an identifier needs a piece of this many letters or digits: with only
# shorter pieces (`v2.3.1`) the trigram index has nothing to narrow with and would be read
# whole. Such an identifier is still found exactly through its own term.
_TRIGRAM_RUN = 3


@dataclass(frozen=True)
class LexicalHit:
    """One chunk found by the lexical channel, ranked by BM25 (score desc, chunk id asc)."""

    chunk_id: int
    content: str
    relative_path: str
    heading_path: list[str]
    chunk_index: int
    document_id: int
    content_hash: str
    page_start: int | None  # the PDF pages the text comes from; None without pages
    page_end: int | None
    knowledge_base: str  # the slug of the chunk's knowledge base
    score: float  # BM25 plus the phrase bonus; not bounded, comparable within one query only
    rank: int  # 1-based position in this channel's ranking
    matched_share: float  # share of the query's kept terms this chunk holds, 0..1


@dataclass(frozen=True)
class _LexicalQuery:
    terms: list[str]
    identifier_parts: list[str | None]  # an identifier's parts, space-separated; else None
    pair_left: list[str]
    pair_right: list[str]


def lexical_query_terms(query: str) -> list[str]:
    """The distinct analysed terms of `query`, in order of first appearance."""
    return _query_parse(query).terms


def lexical_search(*, query: str, limit: int,
                   knowledge_base_ids: Sequence[int]) -> list[LexicalHit]:
    """The `limit` chunks with the best BM25 for `query`; [] when no term of it is usable
    (no terms, or every term too common or absent)."""
    if limit < 1:
        raise InvalidRequest(f"limit must be at least 1, got {limit}", details={"field": "limit"})
    parsed = _query_parse(query)
    if not parsed.terms:
        return []
    params = {"terms": parsed.terms, "identifier_parts": parsed.identifier_parts,
              "pair_left": parsed.pair_left, "pair_right": parsed.pair_right,
              "k1": sql.BM25_K1, "b": sql.BM25_B, "max_df_share": sql.LEXICAL_MAX_DF_SHARE,
              "phrase_weight": sql.LEXICAL_PHRASE_WEIGHT,
              "heading_weight": sql.LEXICAL_HEADING_WEIGHT, "limit": limit,
              "kb_ids": list(knowledge_base_ids)}
    with db_errors_translated():
        conn = index_connection()
        with psycopg.Cursor(conn) as cursor:
            cursor.execute(sql.LEXICAL_SEARCH, params)
            rows = cursor.fetchall()
    return [LexicalHit(chunk_id=chunk_id, content=content, relative_path=relative_path,
                       heading_path=list(heading_path), chunk_index=chunk_index,
                       document_id=document_id, content_hash=content_hash,
                       page_start=page_start, page_end=page_end, knowledge_base=knowledge_base,
                       score=score, rank=rank, matched_share=matched_share)
            for rank, (chunk_id, content, relative_path, heading_path, chunk_index, document_id,
                       content_hash, page_start, page_end, knowledge_base, score, matched_share)
            in enumerate(rows, start=1)]


def _query_parse(query: str) -> _LexicalQuery:
    """Distinct terms (the first MAX_QUERY_TERMS), the parts of those that are identifiers, and
    the adjacent pairs of whole tokens in query order (a compound's parts share its position,
    so only the wholes pair up; a stop word between two words keeps them apart)."""
    tokens = text_analyze(text=query)
    terms = list(dict.fromkeys(term for position_terms in tokens
                               for term in position_terms))[:MAX_QUERY_TERMS]
    identifier_parts = {position_terms[0]: " ".join(position_terms[1:])
                        for position_terms in tokens if _is_identifier(position_terms)}
    kept = set(terms)
    pairs: list[tuple[str, str]] = []
    for before, after in pairwise(tokens):
        if not before or not after:
            continue
        pair = (before[0], after[0])
        if pair not in pairs and pair[0] in kept and pair[1] in kept:
            pairs.append(pair)
    return _LexicalQuery(terms=terms,
                         identifier_parts=[identifier_parts.get(term) for term in terms],
                         pair_left=[left for left, _ in pairs],
                         pair_right=[right for _, right in pairs])


def _is_identifier(position_terms: tuple[str, ...]) -> bool:
    """Whether a whole token is an identifier worth a substring lookup: joined by connectors
    (so 3+ characters), with a piece long enough for a trigram. A token without a connector
    (`1042`, `err1042`) is one run of letters and digits, which text can only hold as that same
    term or inside a longer run, where a substring lookup with word boundaries finds nothing
    more."""
    return (len(position_terms) > 1 and len(position_terms[0]) >= 3
            and any(len(part) >= _TRIGRAM_RUN for part in position_terms[1:]))
