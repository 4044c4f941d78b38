"""The reference row of `rag eval --beir`: an independent stemmed BM25 over the same documents.

bm25s (Lucene's BM25, k1 1.5, b 0.75) over whole documents (title and text), with a tokenizer
of its own kept apart from the product's analyzer on purpose, so the row checks the lexical
channel instead of repeating it: case-folded runs of letters and digits, bm25s's English stop
words, English Snowball stems (PyStemmer), and CJK runs as overlapping character bigrams.
bm25s is a test and benchmark dependency (requirements-test.txt); without it the row is left out
and the report says why.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Mapping

import Stemmer

_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


class ReferenceUnavailable(Exception):
    """bm25s is not installed."""


def reference_tokens(text: str, *, stopwords: frozenset[str], stemmer: Stemmer.Stemmer
                     ) -> list[str]:
    """The reference's tokens of `text`."""
    tokens: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        for piece in _CJK.split(word):
            if piece and piece not in stopwords:
                tokens.append(stemmer.stemWord(piece))
        for run in _CJK.findall(word):
            tokens.extend(run[start:start + 2] for start in range(max(1, len(run) - 1)))
    return tokens


def reference_rankings(*, documents: Mapping[str, tuple[str, str]], queries: Mapping[str, str],
                       depth: int) -> tuple[dict[str, list[str]], list[float]]:
    """query id -> the `depth` best document ids by the reference BM25, and per query the
    milliseconds it took (in memory, after the index is built)."""
    try:
        import bm25s
        from bm25s.stopwords import STOPWORDS_EN
    except ImportError:
        raise ReferenceUnavailable("the reference BM25 needs bm25s "
                                   "(pip install -r requirements-test.txt)") from None
    stopwords = frozenset(STOPWORDS_EN)
    stemmer = Stemmer.Stemmer("english")
    ids = list(documents)
    corpus = [reference_tokens(f"{title}\n{text}", stopwords=stopwords, stemmer=stemmer)
              for title, text in documents.values()]
    # bm25s cannot index an empty document; a placeholder token no query can hold keeps ids aligned.
    corpus = [tokens or ["\x00"] for tokens in corpus]
    model = bm25s.BM25()
    model.index(corpus, show_progress=False)
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    k = min(depth, len(ids))
    for query_id, text in queries.items():
        started = time.perf_counter()
        tokens = reference_tokens(text, stopwords=stopwords, stemmer=stemmer)
        known = [token for token in tokens if token in model.vocab_dict]
        if not known:
            rankings[query_id] = []
        else:
            found, scores = model.retrieve([known], k=k, show_progress=False)
            rankings[query_id] = [ids[index] for index, score in zip(found[0], scores[0])
                                  if score > 0]
        latencies.append((time.perf_counter() - started) * 1000)
    return rankings, latencies
