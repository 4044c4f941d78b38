"""Removal of citation markers that point at no context block, whole or streamed.

What counts as a marker (outside code only):

    marker    := open "^"? number (separator number)* close
    open      := "[" | "［" | "【"          close := "]" | "］" | "】"
    number    := decimal digits (ASCII, full-width or any other Unicode decimal digit)
    separator := blank* ("," | "，" | "、" | ";" | "；") blank*      blank := space, tab, U+3000

So `[2]`, `[1, 9]`, `[1,9]`, `【9】`, `［９］` and `[^9]` are markers; `[ 1]`, `[1.5]`, `[note]`
are not. Open and close need not match: `【9]` shows the reader a source number all the same.
Every number outside 1..block_count is removed and counted once; a list keeps its valid members
with their original separators, and a marker left with none disappears. Whitespace around a
removed marker is left as it is.

Code is left alone, because `arr[10]` is not a citation:

- a fenced block opens at a line whose first non-blank characters are three or more backticks
  (with no other backtick on the line) or tildes, and closes after a line holding only a run of
  the same character at least as long, or at the end of the text. Any indentation is accepted,
  unlike CommonMark's 0-3 spaces, because models indent fences inside list items;
- an inline code span runs from a run of n backticks to the next run of exactly n, unless a
  blank line or a fence-opening line comes first; a run that never closes is ordinary text, as
  in CommonMark (so a stray backtick cannot shelter an invalid marker). Backslash escapes of
  backticks are not modelled.

`citations_strip` and `CitationStreamFilter` run the same scanner. The scanner only ever
decides what a piece of text is once no later text can change that decision, and otherwise
holds the piece back: an open marker (`[1, `), a backtick run until it closes or cannot, a line
that may still turn out to open or close a fence. That is what makes the streamed text equal
the whole-text result for any split of the stream.
"""

from __future__ import annotations

import re
import unicodedata

_OPEN = "[\\[［【]"
_CLOSE = "[\\]］】]"
_BLANK = "[ \\t\u3000]"
_SEPARATOR = f"{_BLANK}*[,，、;；]{_BLANK}*"
# The shape of a marker, without groups; answering.context uses it to spot fake block headers.
MARKER_PATTERN = f"{_OPEN}\\^?\\d+(?:{_SEPARATOR}\\d+)*{_CLOSE}"

_MARKER = re.compile(f"(?P<open>{_OPEN}\\^?)(?P<numbers>\\d+(?:{_SEPARATOR}\\d+)*)"
                     f"(?P<close>{_CLOSE})")
_NUMBER = re.compile(r"\d+")
# A tail that may still become a marker once more text arrives: every proper prefix of one.
_OPEN_TAIL = re.compile(f"{_OPEN}\\^?(?:\\d+(?:{_SEPARATOR}\\d+)*"
                        f"(?:{_BLANK}+|{_BLANK}*[,，、;；]{_BLANK}*)?)?\\Z")

# Lines are given without their "\n"; "\r" is tolerated where CRLF text would put it.
_FENCE_OPEN = re.compile(r"[ \t]*(?P<fence>`{3,}(?![^`\n]*`)|~{3,})")
# Every prefix of a line that could still become a fence opener.
_FENCE_OPEN_PREFIX = re.compile(r"[ \t]*(?:`{0,2}|~{0,2}|`{3,}[^`]*|~{3,}.*)")
_BLANK_LINE = re.compile(r"[ \t\r]*")
_TEXT_STOP = re.compile(r"[`\n]")
_SPAN_STOP = re.compile(r"`+|\n")
_BACKTICKS = re.compile(r"`+")


def citations_strip(*, text: str, block_count: int) -> tuple[str, int]:
    """`text` without marker numbers outside 1..block_count, and how many were removed."""
    stream_filter = CitationStreamFilter(block_count=block_count)
    stripped = stream_filter.feed(text) + stream_filter.finish()
    return stripped, stream_filter.removed


class CitationStreamFilter:
    """Incremental `citations_strip`: feed deltas, emit what is decided, hold back the rest."""

    def __init__(self, *, block_count: int) -> None:
        self.block_count = block_count
        self.removed = 0
        # What is not emitted yet is `_text[_head:]`. Steps move `_head` rather than slicing the
        # rest off, which would copy a long answer once per line.
        self._text = ""
        self._head = 0
        self._line_start = True
        # While a backtick run at `_head` waits for its closing run: how far past `_head` the
        # search resumes, so that a long wait is not rescanned on every delta.
        self._span_resume = 0
        # Inside a fenced block: the closing line it waits for, whole and as any prefix of it.
        self._fence: tuple[re.Pattern[str], re.Pattern[str]] | None = None

    def feed(self, delta: str) -> str:
        """The part of the text so far that can no longer change, with invalid markers removed."""
        self._text, self._head = self._text[self._head:] + delta, 0
        return self._drain(final=False)

    def finish(self) -> str:
        """Whatever is still held back, filtered; call once after the last delta."""
        return self._drain(final=True)

    def _drain(self, *, final: bool) -> str:
        emitted = []
        while self._head < len(self._text):
            fence = self._fence
            piece = (self._fence_step(fence=fence, final=final) if fence
                     else self._text_step(final=final))
            if piece is None:
                break
            emitted.append(piece)
        return "".join(emitted)

    # Each step handles the text at `_head` and returns what it emits, or None when the next
    # decision needs text that has not arrived yet (never when `final`).

    def _text_step(self, *, final: bool) -> str | None:
        text, head = self._text, self._head
        if self._line_start:
            kind = _line_kind(text, head, final=final)
            if kind is None:
                return None
            self._line_start = False
            opener = _FENCE_OPEN.match(text, head)
            if kind != "fence" or opener is None:
                return ""
            char, length = re.escape(opener.group("fence")[0]), len(opener.group("fence"))
            self._fence = (re.compile(f"[ \\t]*{char}{{{length},}}[ \\t\\r]*"),
                           re.compile(f"[ \\t]*(?:{char}*|{char}{{{length},}}[ \\t\\r]*)"))
            return self._verbatim_line()
        stop = _TEXT_STOP.search(text, head)
        if stop is None:
            if final:
                return self._prose(len(text))
            tail = _OPEN_TAIL.search(text, head)
            cut = tail.start() if tail else len(text)
            return self._prose(cut) if cut > head else None
        if stop.start() > head:
            # Markers hold neither backticks nor line breaks, so this text is complete.
            return self._prose(stop.start())
        if stop.group() == "\n":
            self._line_start = True
            return self._verbatim(head + 1)
        end, resume = _code_span_end(text, head, resume=head + self._span_resume, final=final)
        if end is None:
            self._span_resume = resume - head
            return None
        return self._verbatim(end)

    def _fence_step(self, *, fence: tuple[re.Pattern[str], re.Pattern[str]], final: bool
                    ) -> str | None:
        closing, closing_prefix = fence
        text, head = self._text, self._head
        if self._line_start:
            newline = text.find("\n", head)
            if newline < 0 and not final:
                if closing_prefix.fullmatch(text, head):
                    return None
            elif closing.fullmatch(text, head, len(text) if newline < 0 else newline):
                self._fence = None
        return self._verbatim_line()

    def _verbatim_line(self) -> str:
        newline = self._text.find("\n", self._head)
        self._line_start = newline >= 0
        return self._verbatim(newline + 1 if newline >= 0 else len(self._text))

    def _verbatim(self, end: int) -> str:
        piece, self._head = self._text[self._head:end], end
        self._span_resume = 0
        return piece

    def _prose(self, end: int) -> str:
        return _MARKER.sub(self._marker_filtered, self._verbatim(end))

    def _marker_filtered(self, marker: re.Match[str]) -> str:
        numbers = marker.group("numbers")
        items = list(_NUMBER.finditer(numbers))
        kept = [index for index, item in enumerate(items)
                if _number_valid(digits=item.group(), block_count=self.block_count)]
        self.removed += len(items) - len(kept)
        if not kept:
            return ""
        # Each kept member after the first keeps the separator written just before it.
        members = [items[kept[0]].group()]
        members += [numbers[items[index - 1].end():items[index].end()] for index in kept[1:]]
        return f"{marker.group('open')}{''.join(members)}{marker.group('close')}"


def _number_valid(*, digits: str, block_count: int) -> bool:
    # Digit by digit with an early exit: int() of a thousands-digit "number" is refused by
    # Python's int-string limit, and no such number is ever a block.
    value = 0
    for digit in digits:
        value = value * 10 + unicodedata.decimal(digit)
        if value > block_count:
            return False
    return value >= 1


def _line_kind(text: str, start: int, *, final: bool) -> str | None:
    """"fence", "blank" or "text" for the line at `start`; None until that is known."""
    newline = text.find("\n", start)
    if newline < 0 and not final:
        if (_FENCE_OPEN_PREFIX.fullmatch(text, start)
                or _BLANK_LINE.fullmatch(text, start)):
            return None
        return "text"
    end = len(text) if newline < 0 else newline
    if _BLANK_LINE.fullmatch(text, start, end):
        return "blank"
    return "fence" if _FENCE_OPEN.match(text, start, end) else "text"


def _code_span_end(text: str, start: int, *, resume: int, final: bool
                   ) -> tuple[int | None, int]:
    """Where the code span opened by the backtick run at `start` ends (the end of that run when
    it opens none; None until that is known), and where a search of a longer `text` may resume:
    nothing before that point can change the answer."""
    run = _BACKTICKS.match(text, start)
    run_end = run.end() if run else start
    if run_end == len(text) and not final:
        return None, start
    opener = run_end - start
    position = max(run_end, resume)
    while True:
        stop = _SPAN_STOP.search(text, position)
        if stop is None:
            return (run_end if final else None), len(text)
        if stop.group() == "\n":
            kind = _line_kind(text, stop.end(), final=final)
            if kind is None:
                return None, stop.start()
            if kind != "text":
                return run_end, start
        elif stop.end() == len(text) and not final:
            # A run at the very end may still grow, into or out of the opener's length.
            return None, stop.start()
        elif len(stop.group()) == opener:
            return stop.end(), start
        position = stop.end()
