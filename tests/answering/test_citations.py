from __future__ import annotations

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
    "a [link](https://example.com) and ![img](x.png) and [^1] footnote",
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
                "知", "\n", "[note]"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))


def random_split(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(len(text) + 1), k=rng.randint(0, len(text) + 1)))
    bounds = [0, *cuts, len(text)]
    # Empty deltas are kept on purpose: streams do send them.
    return [text[start:end] for start, end in zip(bounds, bounds[1:])]


def test_stream_filter_equals_whole_strip_for_any_split() -> None:
    rng = random.Random(20240611)
    for _ in range(3000):
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
