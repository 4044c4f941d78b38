"""Plain text (.txt): UTF-8, UTF-8 with a byte-order mark, then GB18030, as Chinese Windows
tools still save it. Paragraphs (blank-line separated) are where chunks are cut."""

from __future__ import annotations

import re

from parsing.formats.base import (
    Block,
    Extracted,
    ExtractOptions,
    FormatRejected,
    TextBudget,
    paragraph_breaks,
    title_from_name,
)

FORMAT = "txt"
# A byte-order mark says UTF-8; otherwise UTF-8, then GB18030 — which decodes most byte strings,
# so it is only the last resort.
_BOM = b"\xef\xbb\xbf"
ENCODINGS = ("utf-8", "gb18030")
_NEWLINE = re.compile(r"\r\n?")
# C0 controls other than tab, line feed and carriage return: a sign of a binary file.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def extract(data: bytes, *, name: str, options: ExtractOptions) -> Extracted:
    text, encoding = text_decode(data)
    budget = TextBudget(options)
    budget.take(text)
    text = _NEWLINE.sub("\n", text)
    if _CONTROL.search(text):
        raise FormatRejected("file contains control characters (binary, not text)")
    budget.paragraphs_take(text)
    blocks = [Block(text=text, breaks=paragraph_breaks(text))] if text.strip() else []
    return Extracted(format=FORMAT, title=title_from_name(name), blocks=blocks,
                     facts={"encoding": encoding})


def text_decode(data: bytes) -> tuple[str, str]:
    """(text, encoding name); FormatRejected when no encoding fits."""
    for encoding in ("utf-8-sig",) if data.startswith(_BOM) else ENCODINGS:
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    raise FormatRejected("file is neither UTF-8 nor GB18030 text; save it as UTF-8")
