"""The lexical analyzer: one set of rules for indexing chunks and for reading queries.

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

`text_tokenize` gives those raw tokens. `text_analyze` turns them into the stored and queried
terms (analyzer version ANALYZER_VERSION):

- An English word (ASCII letters only) becomes its Snowball stem (`studies` → `studi`), so a
  query finds the other forms of its words; a word in an English stop-word list (`the`, `of`)
  gives no term but keeps its position, so words it separated never count as adjacent.
- A compound token keeps its whole exactly as written (`err-1042`, `read_cache_enabled`): an
  identifier is matched as itself. Its parts are stemmed like words (`enabled` → `enabl`) and
  never dropped.
- Everything else (numbers, words with digits or accents, other scripts, CJK bigrams) is kept
  as the tokenizer made it.

A chunk's headings are indexed after its content, one position apart and marked with weight B:
they count as occurrences of their terms, and BM25 weighs an occurrence in a heading above one
in the body (retrieval/sql.py). The document's file name (without folder and extension) comes
first, unless the first heading already says the same: a PDF page or a later section without
the identifier it is about (`ZK-0815 钻孔地质编录.pdf`, page 2) is still found by it.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

import Stemmer

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

# 3: the impact cells (below) stored beside the terms; 2: English stems and stop words, the file
# name and headings indexed with weight B. Chunks stored by an older analyzer (1: the raw tokens;
# NULL: before the version was recorded) are re-analysed by `rag ingest` and `rag db init`
# (knowledge/store.py), their vectors untouched.
ANALYZER_VERSION = 3

# An occurrence in a heading (weight B) counts this many times one in the body in BM25's term
# frequency (retrieval/sql.py); the impact cells are made with the same count, so it is a rule
# of the index, not a query setting. Fitted on the train splits of public collections
# (docs/benchmarks.md).
HEADING_WEIGHT = 3

# Impact cells: besides its terms, a chunk stores one lexeme per distinct term naming the cell
# of its (term frequency, chunk length) pair, `term~t.d` (`~` is never part of a term). The
# GIN index over those lexemes is an impact-ordered inverted index: BM25's weight of a term in
# a chunk grows with the frequency and falls with the length, so a cell bounds the weight of
# every chunk in it, whatever the corpus statistics at query time, and retrieval/lexical.py
# reads the cells of highest bound first and scores only the chunks that can reach the top k.
# Cell t holds frequencies up to TF_CELL_UPPER[t] (the last, everything above); cell d holds
# lengths from DL_CELL_LOWER[d] up to the next lower bound. Steps of about 1.5 keep the bound
# within ~25% of any chunk's own weight.
TF_CELL_UPPER = (1, 2, 3, 4, 6, 9, 14)
DL_CELL_LOWER = (1, 9, 13, 19, 28, 41, 61, 91, 136, 201, 301, 451, 676, 1001, 1501, 2251,
                 3376, 5064)
CELL_SEPARATOR = "~"

# Lucene's English stop set plus the question words and pronouns that carry no topic.
ENGLISH_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with", "do", "does", "did", "what", "which",
    "who", "whom", "how", "why", "when", "where", "i", "me", "my", "we", "our", "you", "your",
    "its", "were", "been", "has", "have", "had", "from", "than", "can", "so"))
_ENGLISH_WORD = re.compile(r"[a-z]+")
# A PyStemmer object must not be shared between threads (the server answers in threads).
_stemmers = threading.local()

TERM_MAX_CHARS = 128  # 4 bytes a character at most: far below tsvector's 2 KB per lexeme
POSITION_MAX = 16383  # tsvector's largest position; later tokens share it
POSITIONS_PER_TERM_MAX = 256  # tsvector keeps at most this many positions per lexeme


@dataclass(frozen=True)
class ChunkLexical:
    """What a chunk stores for the lexical channel: its tsvector literal, its term count and
    its impact cells."""

    terms: str  # e.g. "'1042':3 'err':3 'err-1042':3", cast with ::tsvector
    length: int  # number of (term, position) pairs in `terms`: BM25's document length
    cells: str  # e.g. "'1042~0.0' 'err~0.0' 'err-1042~0.0'", cast with ::tsvector


def lexical_cell(*, tf: int, length: int) -> str:
    """The impact cell of a term occurring `tf` times (headings counted HEADING_WEIGHT times)
    in a chunk of `length` terms."""
    return f"{_tf_cell(tf)}.{_length_cell(length)}"


def cell_lexeme(*, term: str, cell: str) -> str:
    return f"{term}{CELL_SEPARATOR}{cell}"


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


def text_analyze(*, text: str) -> list[tuple[str, ...]]:
    """The analysed terms of `text`, one entry per token position (empty for a stop word)."""
    # text_tokenize then _analysed per token, with the word's whole analysis cached: this runs
    # over every chunk written, and a corpus repeats its words.
    normalised = unicodedata.normalize("NFKC", text).casefold()
    analysed: list[tuple[str, ...]] = []
    for index, segment in enumerate(_CJK_RUN.split(normalised)):
        if index % 2:  # a CJK run: bigrams are never stop words and have no stem
            if len(segment) == 1:
                analysed.append((segment,))
            else:
                analysed.extend([(segment[start:start + 2],) for start in range(len(segment) - 1)])
            continue
        analysed.extend([_word_analysed(word) for word in _WORD.findall(segment)])
    return analysed


@lru_cache(maxsize=262144)
def _word_analysed(word: str) -> tuple[str, ...]:
    return _analysed(_word_terms(word))


@lru_cache(maxsize=65536)
def _analysed(token: tuple[str, ...]) -> tuple[str, ...]:
    whole = token[0]
    if len(token) == 1:
        if whole in ENGLISH_STOPWORDS:
            return ()
        return (_stem(whole),)
    return tuple(dict.fromkeys((whole, *(_stem(part) for part in token[1:]))))


def _stem(term: str) -> str:
    if not _ENGLISH_WORD.fullmatch(term):
        return term
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    return stemmer.stemWord(term)


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


def chunk_lexical_build(*, content: str, heading_path: Sequence[str] = (),
                        relative_path: str = "") -> ChunkLexical:
    """The analysed terms of a chunk's content and then of its document's file name and its
    headings (weight B), with positions, as a tsvector literal."""
    # Positions arrive in increasing order, so tsvector's limits are kept on the way (this runs
    # for every chunk written: no sorting or sets per term, the adding inlined).
    positions: dict[str, list[int]] = {}
    position = 0
    for position, terms in enumerate(text_analyze(text=content), start=1):
        kept = position if position < POSITION_MAX else POSITION_MAX
        for term in terms:
            found = positions.get(term)
            if found is None:
                positions[term] = [kept]
            elif found[-1] != kept and len(found) < POSITIONS_PER_TERM_MAX:
                found.append(kept)
    heading_positions: dict[str, list[int]] = {}
    # One position left empty, so the last content word and the first heading word are never
    # adjacent; headings are separated the same way. Consecutive chunks share their headings:
    # their analysis is cached.
    for heading in _headings(heading_path=tuple(heading_path), relative_path=relative_path):
        position += 1
        # The heading's words from `first` on; after them `position` is its last word's (still
        # the gap's for a heading without words), where the next heading's gap follows.
        first = position + 1
        for position, terms in enumerate(_heading_analysed(heading), start=first):
            _positions_add(positions, terms, position)
            _positions_add(heading_positions, terms, position)
    return _literal(positions, weighted=heading_positions)


@lru_cache(maxsize=4096)
def _heading_analysed(heading: str) -> tuple[tuple[str, ...], ...]:
    return tuple(text_analyze(text=heading))


@lru_cache(maxsize=4096)
def _headings(*, heading_path: tuple[str, ...], relative_path: str) -> tuple[str, ...]:
    name = PurePosixPath(relative_path).stem if relative_path else ""
    if name and not (heading_path and heading_path[0].strip().casefold()
                     == name.strip().casefold()):
        return (name, *heading_path)
    return heading_path


def _positions_add(positions: dict[str, list[int]], terms: tuple[str, ...], position: int) -> None:
    position = min(position, POSITION_MAX)
    for term in terms:
        found = positions.get(term)
        if found is None:
            positions[term] = [position]
        elif found[-1] != position and len(found) < POSITIONS_PER_TERM_MAX:
            found.append(position)


def _literal(positions: Mapping[str, list[int]],
             weighted: Mapping[str, list[int]] | None = None) -> ChunkLexical:
    """`positions` holds, per term, its sorted distinct positions within tsvector's limits;
    `weighted`, the subset of them marked with weight B (the headings). A term's frequency in
    its cell is what BM25 counts from the stored tsvector: its positions kept, those marked B
    counted HEADING_WEIGHT times."""
    # This runs for every chunk written: one cached lookup per term, the cell lexeme made from
    # the quoted term (its closing quote replaced by the cell, which needs no quoting).
    weighted = weighted or {}
    length = sum(map(len, positions.values()))
    suffix = f".{_length_cell(length)}'"
    tf_cells = _TF_CELLS
    last = len(TF_CELL_UPPER)
    entries = []
    cells = []
    for term in sorted(positions):
        found = positions[term]
        quoted = _quoted(term)
        heading = weighted.get(term)
        if heading:
            marked = set(heading)
            entries.append(f"{quoted}:" + ",".join(
                f"{position}B" if position in marked else str(position) for position in found))
            tf = len(found) + (HEADING_WEIGHT - 1) * len(marked.intersection(found))
        else:
            tf = len(found)
            entries.append(f"{quoted}:{found[0]}" if tf == 1
                           else f"{quoted}:" + ",".join(map(str, found)))
        cells.append(f"{quoted[:-1]}{CELL_SEPARATOR}{tf_cells[tf] if tf < len(tf_cells) else last}"
                     f"{suffix}")
    return ChunkLexical(terms=" ".join(entries), length=length, cells=" ".join(cells))


@lru_cache(maxsize=262144)
def _quoted(term: str) -> str:
    return lexeme_quote(term)


def _tf_cell(tf: int) -> int:
    return bisect_left(TF_CELL_UPPER, tf)


_TF_CELLS = tuple(_tf_cell(tf) for tf in range(TF_CELL_UPPER[-1] + 2))


def _length_cell(length: int) -> int:
    return max(0, bisect_right(DL_CELL_LOWER, length) - 1)
