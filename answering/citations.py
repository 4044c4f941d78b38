"""Removal of citation markers `[n]` that point at no context block, whole or streamed.

A marker is `[` digits `]`. Markers cannot nest or overlap, so stripping any prefix that does
not end inside a marker and then the rest gives the same text as stripping the whole — which
is what lets the stream filter agree exactly with `citations_strip`. Whitespace around a
removed marker is left as it is, identically on both paths.
"""

from __future__ import annotations

import re

_MARKER = re.compile(r"\[(\d+)\]")
# A tail that may still become a marker once more text arrives.
_OPEN_TAIL = re.compile(r"\[\d*\Z")


def citations_strip(*, text: str, block_count: int) -> tuple[str, int]:
    """`text` without markers outside 1..block_count, and how many were removed."""
    removed = 0

    def keep_or_drop(match: re.Match[str]) -> str:
        nonlocal removed
        if 1 <= int(match.group(1)) <= block_count:
            return match.group(0)
        removed += 1
        return ""

    return _MARKER.sub(keep_or_drop, text), removed


class CitationStreamFilter:
    """Incremental `citations_strip`: feed deltas, emit what is safe, hold back an open `[digits`."""

    def __init__(self, *, block_count: int) -> None:
        self.block_count = block_count
        self.removed = 0
        self._pending = ""

    def feed(self, delta: str) -> str:
        """The part of the text so far that can no longer change, with invalid markers removed."""
        self._pending += delta
        tail = _OPEN_TAIL.search(self._pending)
        cut = tail.start() if tail else len(self._pending)
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._strip(ready)

    def finish(self) -> str:
        """Whatever is still held back, filtered; call once after the last delta."""
        ready, self._pending = self._pending, ""
        return self._strip(ready)

    def _strip(self, text: str) -> str:
        stripped, removed = citations_strip(text=text, block_count=self.block_count)
        self.removed += removed
        return stripped
