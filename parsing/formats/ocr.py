"""Optional OCR of scanned pages: rapidocr (its wheel ships the ONNX detection, direction and
recognition models for Chinese and English) on onnxruntime, installed with the `ocr` extra.
Nothing is downloaded at run time.

The recogniser is loaded once per process, on the first scanned page. A run shares one page
budget across its worker processes (RAG_OCR_MAX_PAGES), so a thousand-page scan cannot keep an
ingest busy for hours: pages past the budget are left for the next run, which picks them up.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection
from functools import lru_cache
from typing import Any

INSTALL_HINT = 'make install-ocr, or pip install -e ".[ocr]"'
# Pages are rendered at this resolution for recognition: enough for 9-point text.
RENDER_DPI = 200

_budget: Any = None  # a multiprocessing.Value shared by the run's processes, or None (no cap)
_engine_lock = threading.Lock()

# Recognisers often read a monospaced or letter-spaced identifier as separate characters:
# `E R R - 1 0 4 2`. A run of at least four single letters or digits (hyphens, dots, slashes
# and underscores between them) separated by single spaces, holding a digit or a separator, is
# one identifier again, when it has a letter too (a row of spaced numbers stays a row).
# Ordinary words never match: each part is one character.
_SPACED_IDENTIFIER = re.compile(
    r"(?<![\w-])[A-Za-z0-9](?: ?[-_./] ?[A-Za-z0-9]| [A-Za-z0-9])+(?![\w-])")
_SEPARATOR_OR_DIGIT = re.compile(r"[-_./0-9]")


def identifiers_join(text: str) -> str:
    """`E R R - 1 0 4 2` → `ERR-1042`; everything else is left as it is."""

    def join(match: re.Match[str]) -> str:
        run = match.group(0)
        parts = run.replace(" ", "")
        characters = sum(character.isalnum() for character in parts)
        if (" " not in run or characters < 4 or not _SEPARATOR_OR_DIGIT.search(parts)
                or not any(character.isalpha() for character in parts)):
            return run
        return parts

    return _SPACED_IDENTIFIER.sub(join, text)


@lru_cache(maxsize=1)
def ocr_available() -> bool:
    """True when the optional recogniser and its runtime can be imported."""
    try:
        import onnxruntime  # noqa: F401
        import rapidocr  # noqa: F401
    except ImportError:
        return False
    return True


@lru_cache(maxsize=1)
def _engine() -> Any:
    from rapidocr import RapidOCR

    # rapidocr logs every model file it opens at INFO, on its own handler.
    return RapidOCR(params={"Global.log_level": "warning"})


def image_recognise(image: Any) -> tuple[str, float | None]:
    """(text, mean confidence) of one page image (PIL); ("", None) when nothing was read.
    Lines come in the recogniser's reading order, one per line."""
    with _engine_lock:  # one inference session per process; it is not re-entrant
        result = _engine()(image)
    lines = [identifiers_join(text.strip()) for text in (result.txts or ()) if text.strip()]
    scores = [float(score) for score in (result.scores or ())]
    if not lines:
        return "", None
    return "\n".join(lines), confidence_mean(scores) if scores else None


def confidence_mean(scores: Collection[float]) -> float:
    """The mean of (at least one) recogniser confidences, to four places: of a page's lines,
    a chunk's pages or a document's pages."""
    return round(sum(scores) / len(scores), 4)


def budget_use(budget: Any) -> None:
    """Share `budget` (a multiprocessing.Value('i') of pages left, or None for no cap) with
    this process; called in the parent and in every worker's initializer."""
    global _budget
    _budget = budget


def page_take() -> bool:
    """Take one page from the run's OCR budget; False when it is spent."""
    if _budget is None:
        return True
    with _budget.get_lock():
        if _budget.value <= 0:
            return False
        _budget.value -= 1
        return True
