"""Verified citations: for each `[n]` of an answer, the span of block n the sentence relies on.

The claim of a marker is the answer's text just before it: the sentence the marker ends (a
marker after the sentence's full stop, as in "… 升级。 [1]", belongs to that sentence). Its
quote is, in block n's text as the chunk holds it:
- a passage the claim puts in quotation marks (“…”, "…", 「…」, 『…』) found there verbatim; else
- the sentence of the block that shares most of the claim's terms (lower-cased words, and
  every pair of adjacent CJK characters), the earliest on a tie, without the Markdown marks
  that open it (a heading's hashes, a list item's bullet).
`support` is the share of the claim's terms the quote holds (1.0 for a verbatim quotation). A
marker whose best quote has less than SUPPORT_MIN is unsupported: counted, and its citation
keeps no quote unless another sentence citing the same block is supported. Offsets are
character offsets into the block's text: `text[start:end] == quote`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from answering.citations import MARKER_PATTERN

SUPPORT_MIN = 0.35
QUOTE_MIN_CHARS = 4

_MARKER = re.compile(MARKER_PATTERN)
_NUMBER = re.compile(r"\d+")
_SENTENCE_END = re.compile(r"[。！？!?]|\.(?=\s|$)|\n")
# A block's sentences: runs up to and including their end mark, or up to a line break.
_BLOCK_SENTENCE = re.compile(r"[^\s。！？!?\n][^。！？!?\n]*?(?:[。！？!?]|\.(?=\s|$)|(?=\n)|$)")
# Markdown's own marks before a sentence (a heading's hashes, a list item's bullet or number, a
# quotation's `>`): not part of what the sentence says.
_LEAD = re.compile(r"(?:#{1,6}[ \t]+|[-*+][ \t]+|\d+[.)][ \t]+|>[ \t]*)+")
_QUOTED = re.compile(r"“([^”]+)”|\"([^\"]+)\"|「([^」]+)」|『([^』]+)』")
_WORD = re.compile(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclass(frozen=True)
class Quote:
    text: str
    start: int
    end: int
    support: float


def citations_verify(*, answer: str,
                     block_texts: Sequence[str]) -> tuple[list[Quote | None], int]:
    """(the best supported quote of each block, None for one the answer does not cite or
    cites without support; how many markers are unsupported)."""
    best: list[Quote | None] = [None] * len(block_texts)
    unsupported = 0
    segment_start = 0
    for marker in _MARKER.finditer(answer):
        claim = _claim(answer[segment_start:marker.start()]) or _claim(answer[:marker.start()])
        segment_start = marker.end()
        for digits in _NUMBER.findall(marker.group(0)):
            number = int(digits)
            if not 1 <= number <= len(block_texts):
                continue
            quote = quote_find(claim=claim, text=block_texts[number - 1])
            if quote is None or quote.support < SUPPORT_MIN:
                unsupported += 1
                continue
            current = best[number - 1]
            if current is None or quote.support > current.support:
                best[number - 1] = quote
    return best, unsupported


def _claim(prefix: str) -> str:
    """The last sentence of `prefix` (its end mark and any trailing blank ignored)."""
    text = _MARKER.sub(" ", prefix).rstrip()
    body = text[:-1] if text and _SENTENCE_END.fullmatch(text[-1]) else text
    ends = [match.end() for match in _SENTENCE_END.finditer(body)]
    return body[ends[-1] if ends else 0:].strip()


def quote_find(*, claim: str, text: str) -> Quote | None:
    """The span of `text` that best supports `claim`, or None when nothing does at all."""
    claim_terms = terms(claim)
    if not claim_terms:
        return None
    for match in _QUOTED.finditer(claim):
        quoted = next(group for group in match.groups() if group is not None).strip()
        start = text.find(quoted)
        if len(quoted) >= QUOTE_MIN_CHARS and start >= 0:
            return Quote(text=quoted, start=start, end=start + len(quoted), support=1.0)
    best: Quote | None = None
    for sentence in _BLOCK_SENTENCE.finditer(text):
        lead = _LEAD.match(sentence.group(0))
        skip = lead.end() if lead else 0
        span = sentence.group(0)[skip:].rstrip()
        if not span:
            continue
        support = len(claim_terms & terms(span)) / len(claim_terms)
        if best is None or support > best.support:
            start = sentence.start() + skip
            best = Quote(text=span, start=start, end=start + len(span), support=round(support, 3))
    return best if best is not None and best.support > 0 else None


def terms(text: str) -> set[str]:
    """Lower-cased words and the pairs of adjacent CJK characters (single ones for a run of
    one) of `text`: enough to tell which sentence of a source a claim comes from."""
    lowered = text.lower()
    found = set(_WORD.findall(lowered))
    for run in _CJK.findall(lowered):
        found.update(run[index:index + 2] for index in range(max(1, len(run) - 1)))
    return found
