"""A document's text rebuilt from its chunks (knowledge/document_text.py): the chunker's overlaps
taken out again, nothing lost, a marker before each page, and no text dropped where two chunks
merely begin and end alike."""

from __future__ import annotations

import random

import pytest

from knowledge.document_text import ChunkText, overlap_length, text_pieces
from parsing.chunking import blocks_chunk, note_chunk
from parsing.formats.base import Block
from parsing.markdown import note_parse

# A small vocabulary: the same words and phrases come back often, as coincidences would.
WORDS = ("ridge drill vein survey the of and to with core sample grade tungsten copper "
         "report metres hole").split()
HANZI = "矿脉钻孔岩芯样品品位报告勘探区域深度"


def mixed_note(seed: int) -> str:
    """Sections of English and Chinese sentences, long ones among them, and code blocks."""
    rng = random.Random(seed)
    parts = ["# Survey"]
    for number in range(8):
        parts.append(f"## Section {number}")
        sentences = []
        for _ in range(rng.randint(1, 60)):
            if rng.random() < 0.6:
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
                sentences.append(words.capitalize() + rng.choice(".!?"))
            else:
                sentences.append("".join(rng.choice(HANZI) for _ in range(rng.randint(5, 60)))
                                 + "。")
        parts.append(" ".join(sentences))
        if rng.random() < 0.3:
            parts.append("```python\n" + "\n\n".join(
                f"depth_{line} = log({line})" for line in range(rng.randint(5, 150))) + "\n```")
    return "\n\n".join(parts) + "\n"


def squeezed(text: str) -> str:
    return "".join(text.split())


def rebuilt(drafts) -> str:
    return "".join(text_pieces(ChunkText(heading_path=list(draft.heading_path),
                                         page_start=draft.page_start, page_end=draft.page_end,
                                         content=draft.content) for draft in drafts))


@pytest.mark.parametrize("seed", range(8))
def test_a_notes_chunks_rebuild_its_sections_without_the_overlaps(seed):
    note = note_parse(text=mixed_note(seed))
    drafts = note_chunk(note=note)
    assert len(drafts) > len({tuple(draft.heading_path) for draft in drafts}), "overlaps exist"
    text = rebuilt(drafts)
    sections = [section.source for section in note.sections if section.body.strip()]
    assert squeezed(text) == squeezed("".join(sections))
    # Each section is its source (trimmed), sections apart by a blank line.
    for source in sections:
        assert source.strip() in text


def test_a_continuation_keeps_the_whitespace_after_its_overlap():
    body = " ".join(f"Sentence number {n} tells about the export limits." for n in range(400))
    note = note_parse(text=f"# Limits\n\n{body}\n")
    drafts = note_chunk(note=note)
    assert len(drafts) > 2
    assert rebuilt(drafts) == f"# Limits\n\n{body}"


def paged_text(pages: list[str]) -> Block:
    offsets, position = [], 0
    for number, page in enumerate(pages, start=1):
        offsets.append((position, number))
        position += len(page)
    return Block(text="".join(pages), pages=tuple(offsets))


def test_pages_get_a_marker_each_and_a_repeated_page_header_stays():
    header = "ACME Survey Report — Confidential draft"
    pages = [f"{header}\n\n" + " ".join(f"Page {number} line {n} on the ridge drilling."
                                        for n in range(60)) + f"\n\n{header}\n\n"
             for number in (1, 2, 3)]
    drafts = blocks_chunk(blocks=[paged_text(pages)])
    assert [draft.page_start for draft in drafts] == [1, 2, 3]
    text = rebuilt(drafts)
    assert text.startswith("--- page 1 ---\n\n" + header)
    assert "\n\n--- page 2 ---\n\n" + header in text and "\n\n--- page 3 ---\n\n" in text
    # Page 1 ends with the header page 2 begins with: not an overlap, so both stay.
    assert text.count(header) == 6


def test_a_chunk_across_pages_names_the_range():
    chunks = [ChunkText([], 1, 1, "First page text that is long enough."),
              ChunkText([], 2, 3, "Two nearly empty pages."),
              ChunkText([], 5, 5, "Page five.")]
    assert "".join(text_pieces(chunks)) == (
        "--- page 1 ---\n\nFirst page text that is long enough.\n\n--- pages 2–3 ---\n\n"
        "Two nearly empty pages.\n\n--- page 5 ---\n\nPage five.")


def test_a_short_coincidence_is_not_an_overlap():
    assert overlap_length("ends with the word ridge", "ridge begins here") == 0
    shared = "the shared tail of sixteen+"
    assert overlap_length("x" * 10 + shared, shared + " and more") == len(shared)


def test_sections_without_overlap_are_apart_by_a_blank_line():
    chunks = [ChunkText(["A"], None, None, "# A\n\nAlpha text of the first section here."),
              ChunkText(["B"], None, None, "# B\n\nAlpha text of the first section here.")]
    assert "".join(text_pieces(chunks)) == (
        "# A\n\nAlpha text of the first section here.\n\n# B\n\nAlpha text of the first "
        "section here.")
