"""What the extractive answerer (answering/extractive.py) reads a question and a text by: their
terms, the parts of a question, and its language.

Terms are the lexical index's own (parsing/lexical.py `text_analyze`: Chinese character bigrams,
English stems without stop words, identifiers whole), less the words that only ask: a CJK bigram
made of two function characters (什么, 如何, 哪些, 多少, 是否, 可以…), a lone function
character, and a few English words the index keeps but a question only frames (should, must,
please…). A question's parts are its clauses, split at ？?！!。；;、 and at the conjunctions
and/or/以及/并且/还有/和/及/与.

A part is covered by some texts when they hold at least PART_COVERED of its content: each content
CJK character (not a function character) counts 1 and is held when a bigram holding it is among
the texts' terms; each other term counts 2 (a word says about as much as two characters) and is
held when it is among them. Counting characters rather than bigrams keeps the bigrams that
straddle two words (每次最多 → 次最) from reading as missing facts; a character beside function
characters only (多少行 → 行) is held when any of the texts' terms holds it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from parsing.lexical import text_analyze

PART_COVERED = 0.5
WORD_COUNT = 2  # what a term that is not a CJK bigram counts for, in characters

CJK_FUNCTION = frozenset("的了吗呢吧啊么是有在和与及或那这哪些个里怎样如何什多少为否"
                         "可以能该应要需请问你我他它们把被给对从到就都也还又")
_ENGLISH_FRAMING = ("should", "would", "could", "must", "shall", "may", "might", "please",
                    "tell", "about", "any", "some", "also", "just", "many", "much", "each",
                    "whether", "us")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_PART_BREAK = re.compile(r"[？?！!。；;、\n]+|\s+(?:and|or)\s+|以及|并且|还有|[和及与]",
                         re.IGNORECASE)
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _framing() -> frozenset[str]:
    return frozenset(term for word in _ENGLISH_FRAMING for token in text_analyze(text=word)
                     for term in token)


ENGLISH_FRAMING = _framing()


def clean(text: str) -> str:
    """`text` without lone surrogates (which no encoder writes), whitespace collapsed."""
    return " ".join(_SURROGATE.sub("\ufffd", text).split())


@lru_cache(maxsize=4096)
def text_terms(text: str) -> frozenset[str]:
    """The terms of `text` that say what it is about (module docstring)."""
    return frozenset(term for token in text_analyze(text=text) for term in token
                     if not _framing_only(term))


def _framing_only(term: str) -> bool:
    if term in ENGLISH_FRAMING:
        return True
    return bool(_CJK.match(term)) and all(char in CJK_FUNCTION for char in term)


def question_is_chinese(question: str) -> bool:
    """Whether to answer in Chinese: the question has Han characters, at least as many as
    Latin words."""
    han = len(_CJK.findall(question))
    return han > 0 and han >= len(_LATIN_WORD.findall(question))


def question_parts(question: str) -> list[str]:
    """The clauses of `question` that have terms of their own, as written (whitespace
    collapsed), in order."""
    parts = (part.strip(" ,，:：\"'“”") for part in _PART_BREAK.split(clean(question)))
    return [part for part in parts if part and text_terms(part)]


def part_subject(part: str) -> str:
    """`part` without the words before its subject that only ask ("What is the …")."""
    words = part.split(" ")
    while len(words) > 1 and _LATIN_WORD.fullmatch(words[0]) and not text_terms(words[0]):
        words.pop(0)
    return " ".join(words)


def covered_share(part: str, terms: Iterable[str]) -> float:
    """How much of `part`'s content `terms` hold (module docstring); 1.0 for a part without
    content."""
    held = frozenset(terms)
    total = covered = 0
    for term in text_terms(part):
        if not _CJK.match(term):
            total += WORD_COUNT
            covered += WORD_COUNT if term in held else 0
    held_chars = {char for term in held if _CJK.match(term) for char in term}
    for run in _CJK_RUN.findall(unicodedata.normalize("NFKC", part).casefold()):
        for index, char in enumerate(run):
            if char in CJK_FUNCTION:
                continue
            total += 1
            pairs = [run[start:start + 2] for start in (index - 1, index)
                     if start >= 0 and start + 2 <= len(run)]
            if any(pair in held for pair in pairs):
                covered += 1
            elif all(pair.replace(char, "", 1) in CJK_FUNCTION for pair in pairs) \
                    and char in held_chars:
                # Beside function characters only, its bigrams are never words of their own.
                covered += 1
    return covered / total if total else 1.0
