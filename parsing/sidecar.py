"""Sidecar metadata: a `<file>.meta.yaml` beside a document gives it fields to filter on.

How a team attaches region, mineral and year to a scanned report it cannot edit:

    reports/2021/yunnan-survey.pdf
    reports/2021/yunnan-survey.pdf.meta.yaml   →   region: Yunnan
                                                   mineral: [copper, gold]
                                                   year: 2021
                                                   tags: [geology]

The fields join the document's frontmatter (documents.frontmatter, what `filters.frontmatter`
matches) and its `tags` its tags. Precedence, lowest first: the file's own properties (a PDF's
or DOCX's author, dates, title), then the sidecar, then a note's own frontmatter — a note's
author has the last word on the note, a sidecar on a file that has no frontmatter of its own.
The fields describe the file; they are not searched as its text.

A sidecar is read with the same care as a note (parsing/vault.py): at most
SIDECAR_MAX_BYTES, UTF-8, a YAML mapping of at most FRONTMATTER_VALUE_LIMIT values (aliases
counted as expanded). A broken one is a warning and the document is indexed without it. Adding,
changing or removing a sidecar makes the next ingest store its document again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

SIDECAR_SUFFIX = ".meta.yaml"
SIDECAR_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class Sidecar:
    """A document's sidecar as read: its fields and tags, and what the index keeps of it to
    tell a changed sidecar (documents.metadata `sidecar`)."""

    fields: dict[str, Any]
    tags: list[str]
    stamp: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def sidecar_name(document_name: str) -> str:
    return document_name + SIDECAR_SUFFIX


def is_sidecar(name: str) -> bool:
    return name.lower().endswith(SIDECAR_SUFFIX) and len(name) > len(SIDECAR_SUFFIX)


def sidecar_parse(data: bytes, *, name: str, mtime_ns: int) -> Sidecar:
    """The fields and tags of a sidecar file's bytes; a problem is a warning, never an error."""
    # Here, not at the top: the vault scan imports this module and stays free of the parsers
    # (and of their packages, which a scan run as another user may not be able to read).
    from parsing.markdown import tags_of, yaml_mapping

    stamp = {"file": name, "sha256": hashlib.sha256(data).hexdigest(), "mtime_ns": mtime_ns,
             "size_bytes": len(data)}
    warnings: list[str] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Sidecar(fields={}, tags=[], stamp=stamp,
                       warnings=[f"{name} is not valid UTF-8 (byte {exc.start}); ignored"])
    fields = yaml_mapping(text, what=f"sidecar {name}", warnings=warnings)
    tags = tags_of(fields, warnings=warnings)
    return Sidecar(fields=fields, tags=tags, stamp=stamp, warnings=warnings)


def sidecar_merge(*, frontmatter: dict[str, Any], tags: list[str], is_note: bool,
                  sidecar: Sidecar) -> tuple[dict[str, Any], list[str]]:
    """The document's frontmatter and tags with its sidecar's (precedence: module docstring)."""
    merged = {**sidecar.fields, **frontmatter} if is_note else {**frontmatter, **sidecar.fields}
    seen = {tag.casefold() for tag in tags}
    extra = [tag for tag in sidecar.tags if tag.casefold() not in seen]
    return merged, [*tags, *dict.fromkeys(extra)]


def sidecar_same(stored: dict[str, Any] | None, *, mtime_ns: int, size_bytes: int) -> bool:
    """Whether the sidecar the scan saw (size_bytes -1: none) is the one stored, by
    modification time and size, as documents are."""
    if stored is None:
        return size_bytes < 0
    return stored.get("mtime_ns") == mtime_ns and stored.get("size_bytes") == size_bytes
