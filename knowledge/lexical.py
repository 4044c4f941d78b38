"""The lexical tokenizer: one set of rules for indexing chunks and for reading queries.

PostgreSQL's text-search parsers cannot split Chinese, and pg_trgm cannot match two-character
words, so the terms are made here and handed to PostgreSQL as a ready tsvector literal (never
through a text-search configuration, which would split them again).

Rules, applied to the NFKC-normalised, case-folded text:

- A run of CJK characters (Han, kana, Hangul) becomes overlapping character bigrams, one
  position each (`数据导出` → 数据 据导 导出); a run of one character stays a unigram.
- Any other run of letters, digits and combining marks (Latin with accents, Cyrillic, Greek, …)
  is a word. Words joined by the connectors `-_./:#` form one compound token, kept whole
  (`err-1042`, `v2.3.1`, `a/b`) together with its alphanumeric parts (`err`, `1042`); the whole
  and the parts share one position, so `ERR-1042 timeout` puts `timeout` right after the whole.
  Leading and trailing punctuation never belongs to a token.
- Everything else separates tokens and is dropped: spaces, punctuation (ASCII and CJK), emoji
  and other symbols.
- A term longer than TERM_MAX_CHARS characters is cut to that length (then stripped of trailing
  connectors): a tsvector lexeme must stay under 2 KB, and a query carrying the same long token
  is cut the same way, so it still matches.
- Positions count tokens from 1 in text order. tsvector stores positions up to 16383 and at most
  256 per lexeme; the literal applies both limits itself, so a chunk's term count is exactly the
  number of positions PostgreSQL keeps.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Characters written without spaces between words; a run of them is cut into bigrams.
_CJK = ("\u3005\u3007\u3040-\u30ff\u3131-\u318e\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
        "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f")
_CJK_RUN = re.compile(f"([{_CJK}]+)")
# `\w` leaves out combining marks, which would cut words of scripts that keep them after NFKC
# (a Turkish dotted İ case-folds to i + U+0307; Devanagari vowel signs).
_MARKS = "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670" \
         "\u0900-\u0963\u0966-\u0dff\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_CONNECTORS = "-_./:#"
_LETTERS = rf"(?:[^\W_]|[{_MARKS}])+"
_WORD = re.compile(rf"{_LETTERS}(?:[{re.escape(_CONNECTORS)}]+{_LETTERS})*")
_CONNECTOR_RUN = re.compile(f"[{re.escape(_CONNECTORS)}]+")

TERM_MAX_CHARS = 128  # 4 bytes a character at most: far below tsvector's 2 KB per lexeme
POSITION_MAX = 16383  # tsvector's largest position; later tokens share it
POSITIONS_PER_TERM_MAX = 256  # tsvector keeps at most this many positions per lexeme


@dataclass(frozen=True)
class ChunkLexical:
    """What a chunk stores for the lexical channel: its tsvector literal and its term count."""

    terms: str  # e.g. "'1042':3 'err':3 'err-1042':3", cast with ::tsvector
    length: int  # number of (term, position) pairs in `terms`: BM25's document length


def text_tokenize(*, text: str) -> list[tuple[str, ...]]:
    """The tokens of `text` in order, one entry per position: (whole token, *its parts)."""
    normalised = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[tuple[str, ...]] = []
    for index, segment in enumerate(_CJK_RUN.split(normalised)):
        if index % 2:  # split() with a group puts the CJK runs at the odd indexes
            if len(segment) == 1:
                tokens.append((segment,))
            else:
                tokens.extend((segment[start:start + 2],) for start in range(len(segment) - 1))
            continue
        for match in _WORD.finditer(segment):
            tokens.append(_word_terms(match.group()))
    return tokens


def _word_terms(word: str) -> tuple[str, ...]:
    whole = _term_cut(word)
    parts = _CONNECTOR_RUN.split(word)
    if len(parts) == 1:
        return (whole,)
    terms = [whole]
    for part in parts:
        part = _term_cut(part)
        if part not in terms:
            terms.append(part)
    return tuple(terms)


def _term_cut(term: str) -> str:
    if len(term) <= TERM_MAX_CHARS:
        return term
    return term[:TERM_MAX_CHARS].rstrip(_CONNECTORS)


def lexeme_quote(term: str) -> str:
    """`term` as a quoted tsvector/tsquery lexeme: quotes doubled, backslashes escaped."""
    if "'" in term or "\\" in term:
        term = term.replace("\\", "\\\\").replace("'", "''")
    return "'" + term + "'"


def tsvector_literal_build(*, positions: Mapping[str, Iterable[int]]) -> ChunkLexical:
    """The tsvector literal of term -> positions, within tsvector's limits, and its term count."""
    return _literal({term: sorted({min(position, POSITION_MAX) for position in found}
                                  )[:POSITIONS_PER_TERM_MAX]
                     for term, found in positions.items()})


def chunk_lexical_build(*, content: str) -> ChunkLexical:
    """The lexical terms of a chunk's content, with positions, as a tsvector literal."""
    # Positions arrive in increasing order, so tsvector's limits are kept on the way (this runs
    # for every chunk written: no sorting or sets per term).
    positions: dict[str, list[int]] = {}
    for position, terms in enumerate(text_tokenize(text=content), start=1):
        position = min(position, POSITION_MAX)
        for term in terms:
            found = positions.get(term)
            if found is None:
                positions[term] = [position]
            elif found[-1] != position and len(found) < POSITIONS_PER_TERM_MAX:
                found.append(position)
    return _literal(positions)


def _literal(positions: Mapping[str, list[int]]) -> ChunkLexical:
    """`positions` holds, per term, its sorted distinct positions within tsvector's limits."""
    entries = [f"{lexeme_quote(term)}:{','.join(map(str, positions[term]))}"
               for term in sorted(positions)]
    return ChunkLexical(terms=" ".join(entries),
                        length=sum(len(found) for found in positions.values()))
