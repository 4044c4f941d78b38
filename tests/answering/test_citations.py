from __future__ import annotations

import itertools
import random

import pytest

from answering.citations import CitationStreamFilter, citations_strip


def test_valid_markers_are_kept() -> None:
    assert citations_strip(text="A [1] and B [3].", block_count=3) == ("A [1] and B [3].", 0)


def test_markers_outside_block_range_are_removed_and_counted() -> None:
    text, removed = citations_strip(text="A [0] B [4] C [2] D [12].", block_count=3)
    assert (text, removed) == ("A  B  C [2] D .", 3)


def test_no_blocks_removes_every_marker() -> None:
    assert citations_strip(text="General [1][2].", block_count=0) == ("General .", 2)


@pytest.mark.parametrize("text", [
    "see [note] and [a1] and [1a] and [ 1] and [-1] and [1.5]",
    "a [link](https://example.com) and ![img](x.png) and [^note] footnote",
    "no padding [ 1 ] and [1 ] and [1,] and [,1] and [1,,2] and [^ 1] and [^^1]",
    "unclosed [12 and closed ] later",
])
def test_other_bracketed_text_is_untouched(text: str) -> None:
    assert citations_strip(text=text, block_count=0) == (text, 0)


def stream_through(deltas: list[str], *, block_count: int) -> tuple[str, int]:
    stream_filter = CitationStreamFilter(block_count=block_count)
    emitted = "".join(stream_filter.feed(delta) for delta in deltas) + stream_filter.finish()
    return emitted, stream_filter.removed


def test_filter_holds_back_an_open_marker_until_it_closes() -> None:
    stream_filter = CitationStreamFilter(block_count=2)
    assert stream_filter.feed("Answer [") == "Answer "
    assert stream_filter.feed("1") == ""
    assert stream_filter.feed("2") == ""
    assert stream_filter.feed("] done [2") == " done "
    assert stream_filter.feed("]") == "[2]"
    assert stream_filter.finish() == ""
    assert stream_filter.removed == 1


def test_filter_finish_flushes_an_unclosed_tail() -> None:
    stream_filter = CitationStreamFilter(block_count=2)
    assert stream_filter.feed("ends with [7") == "ends with "
    assert stream_filter.finish() == "[7"
    assert stream_filter.removed == 0


def random_text(rng: random.Random) -> str:
    alphabet = ["[", "]", "[1]", "[2]", "[9]", "[10]", "[0]", "1", "2", "0", "a", " ", "(", ")",
                "知", "\n", "[note]",
                # lists, full-width forms and footnotes
                "[1, 9]", "[1,", ",", ", ", "、", ";", "^", "[^9]", "【", "】", "［", "］", "９",
                "１", "\u3000", "\t",
                # inline code, fences, blank lines and CRLF
                "`", "``", "```", "~~~", "\n```\n", "\n~~~\n", "\n\n", "\r\n", "  "]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))


def random_split(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(len(text) + 1), k=rng.randint(0, len(text) + 1)))
    bounds = [0, *cuts, len(text)]
    # Empty deltas are kept on purpose: streams do send them.
    return [text[start:end] for start, end in itertools.pairwise(bounds)]


def test_stream_filter_equals_whole_strip_for_any_split() -> None:
    rng = random.Random(20240611)
    for _ in range(4000):
        text = random_text(rng)
        block_count = rng.randint(0, 3)
        expected = citations_strip(text=text, block_count=block_count)
        for _ in range(5):
            deltas = random_split(text, rng)
            assert "".join(deltas) == text
            assert stream_through(deltas, block_count=block_count) == expected, deltas


def test_stream_filter_one_character_at_a_time() -> None:
    text = "Alpha [1] beta [5] gamma [2][3] delta [note] [10]"
    assert stream_through(list(text), block_count=2) == citations_strip(text=text, block_count=2)
    assert stream_through(list(text), block_count=2) == (
        "Alpha [1] beta  gamma [2] delta [note] ", 3)


# --- lists, full-width brackets, footnotes --------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("See [1, 9].", ("See [1].", 1)),
    ("See [1,9].", ("See [1].", 1)),
    ("See [9, 1, 2].", ("See [1, 2].", 1)),
    ("See [1; 9 ,2].", ("See [1 ,2].", 1)),
    ("See [1、9、3].", ("See [1、3].", 1)),
    ("See [1, 2, 3].", ("See [1, 2, 3].", 0)),
])
def test_citation_list_keeps_its_valid_members(text: str, expected: tuple[str, int]) -> None:
    assert citations_strip(text=text, block_count=3) == expected


def test_citation_list_without_valid_member_disappears_like_a_lone_marker() -> None:
    # Surrounding whitespace stays as it is, exactly as for a removed single marker.
    assert citations_strip(text="A [9, 10] B [9] C [0,4].", block_count=3) == ("A  B  C .", 5)


@pytest.mark.parametrize(("text", "expected"), [
    ("A [1][9].", ("A [1].", 1)),
    ("A 【1】［９］[^9][2].", ("A 【1】[2].", 2)),
])
def test_adjacent_markers_are_judged_one_by_one(text: str, expected: tuple[str, int]) -> None:
    assert citations_strip(text=text, block_count=3) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("A 【9】.", ("A .", 1)),
    ("A ［9］.", ("A .", 1)),
    ("A ［９］.", ("A .", 1)),
    ("A 【１２】.", ("A .", 1)),
    ("A 【9].", ("A .", 1)),
    ("A 【1, ９】.", ("A 【1】.", 1)),
    ("A 【１】 and ［2］.", ("A 【１】 and ［2］.", 0)),
])
def test_full_width_brackets_and_digits_are_markers(text: str, expected: tuple[str, int]) -> None:
    assert citations_strip(text=text, block_count=3) == expected


def test_footnote_style_markers_are_markers() -> None:
    assert citations_strip(text="A [^9] B [^1] C [^1, 9].", block_count=3) == (
        "A  B [^1] C [^1].", 2)


def test_a_number_too_long_for_int_is_removed_not_raised() -> None:
    text = "A [" + "9" * 5000 + "] B"
    assert citations_strip(text=text, block_count=3) == ("A  B", 1)


# --- code -----------------------------------------------------------------------------------------

CODE_CASES = [
    # inline code spans, any backtick count; the marker outside is still judged
    ("Use `arr[10]` and `[9]` here [9].", ("Use `arr[10]` and `[9]` here .", 1)),
    ("Use ``a`[9]`` here.", ("Use ``a`[9]`` here.", 0)),
    # a span may cross a line break, not a blank line
    ("`a\n[9]` b", ("`a\n[9]` b", 0)),
    ("`a\n\n[9]` b", ("`a\n\n` b", 1)),
    # a backtick that never closes is ordinary text and shelters nothing
    ("a ` b [9] c", ("a ` b  c", 1)),
    ("a `` b [9] ` c", ("a `` b  ` c", 1)),
    # fenced blocks, with backticks or tildes, indented or not, closed by a long enough fence
    ("Code:\n```python\narr[10] = [1, 9]\n```\nDone [9].",
     ("Code:\n```python\narr[10] = [1, 9]\n```\nDone .", 1)),
    ("1. Step:\n    ~~~\n    x[9]\n    ~~\n    y[9]\n    ~~~~\n[9]",
     ("1. Step:\n    ~~~\n    x[9]\n    ~~\n    y[9]\n    ~~~~\n", 1)),
    ("```\r\nx[9]\r\n```\r\n[9]", ("```\r\nx[9]\r\n```\r\n", 1)),
    # an unclosed fence runs to the end of the text
    ("```\narr[10]", ("```\narr[10]", 0)),
    # a backtick on the fence line makes it inline code, not a fence
    ("```py`\n[9]", ("```py`\n", 1)),
    # a fence line ends a code span that is still looking for its closing run
    ("`a\n```\n[9]`\n```\n[9]", ("`a\n```\n[9]`\n```\n", 1)),
]


@pytest.mark.parametrize(("text", "expected"), CODE_CASES)
def test_brackets_in_code_are_left_alone(text: str, expected: tuple[str, int]) -> None:
    assert citations_strip(text=text, block_count=3) == expected


def every_split(text: str) -> list[list[str]]:
    """One delta per character, and every split into two and into three deltas."""
    cuts = range(len(text) + 1)
    splits = [list(text)]
    splits += [[text[:a], text[a:]] for a in cuts]
    splits += [[text[:a], text[a:b], text[b:]] for a in cuts for b in cuts if a <= b]
    return splits


@pytest.mark.parametrize(("text", "expected"), [
    *CODE_CASES,
    ("See [1, 9] and [9,1].", ("See [1] and [1].", 2)),
    ("A 【1】［９］[^9][2].", ("A 【1】[2].", 2)),
])
def test_stream_filter_gives_the_whole_result_for_every_split(
        text: str, expected: tuple[str, int]) -> None:
    for deltas in every_split(text):
        assert stream_through(deltas, block_count=3) == expected, deltas


def test_filter_holds_back_a_backtick_run_until_it_is_known_to_be_code() -> None:
    stream_filter = CitationStreamFilter(block_count=3)
    assert stream_filter.feed("Use `arr") == "Use "
    assert stream_filter.feed("[10]") == ""
    assert stream_filter.feed("` now [9] ") == "`arr[10]` now  "
    assert stream_filter.removed == 1


def test_filter_releases_a_stray_backtick_at_a_blank_line() -> None:
    stream_filter = CitationStreamFilter(block_count=3)
    assert stream_filter.feed("a ` b [9]\n") == "a "
    assert stream_filter.feed("\n[9] c") == "` b \n\n c"
    assert stream_filter.removed == 2


def test_filter_streams_fenced_code_line_by_line() -> None:
    stream_filter = CitationStreamFilter(block_count=3)
    # The fence line is held until its end: a later backtick would make it inline code.
    assert stream_filter.feed("```py") == ""
    assert stream_filter.feed("\narr[10]") == "```py\narr[10]"
    # A line that may still close the fence is held; one that cannot is passed on at once.
    assert stream_filter.feed("\n``") == "\n"
    assert stream_filter.feed("`\n[9]") == "```\n"
    assert stream_filter.finish() == ""
    assert stream_filter.removed == 1
