"""Document formats beyond Markdown notes: one module per format, each with `FORMAT`,
`SUFFIXES` and `extract(data, *, name, options) -> Extracted` (parsing/formats/base.py).
Adding a format is one module and one line in FORMATS.

Format modules are imported on first use: the vault scan needs only the suffixes, and stays
free of the parsing libraries.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

NOTE_SUFFIX = ".md"
# format name -> (module, suffixes it reads)
FORMATS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pdf": ("parsing.formats.pdf", (".pdf",)),
    "docx": ("parsing.formats.word", (".docx",)),
    "txt": ("parsing.formats.plain_text", (".txt",)),
}
_BY_SUFFIX = {suffix: name for name, (_, suffixes) in FORMATS.items() for suffix in suffixes}
# Every suffix the vault scan picks up (compared in lower case).
SUFFIXES = (NOTE_SUFFIX, *_BY_SUFFIX)


def format_name(name: str) -> str:
    """"markdown", "pdf", "docx" or "txt" for a file name."""
    return _BY_SUFFIX.get(suffix_of(name), "markdown")


def format_module(name: str) -> ModuleType | None:
    """The format module for a file name, or None for a Markdown note."""
    format = _BY_SUFFIX.get(suffix_of(name))
    return import_module(FORMATS[format][0]) if format is not None else None


def is_document(name: str) -> bool:
    """True for a file read by a format module (bytes), False for a Markdown note (text)."""
    return suffix_of(name) in _BY_SUFFIX


def suffix_of(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return base[dot:].lower() if dot > 0 else ""
