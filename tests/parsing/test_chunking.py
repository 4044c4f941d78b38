from __future__ import annotations

import hashlib
import random

import pytest

from core.text_tokens import tokens_count
from parsing.chunking import (
    MAX_TOKENS,
    OVERLAP_TOKENS,
    TARGET_TOKENS,
    ChunkDraft,
    blocks_chunk,
    note_chunk,
)
from parsing.markdown import ParsedNote, note_parse

_WORDS = ("alpha beta gamma delta project meeting customer release migration database index "
          "the of and to with for schema vector search").split()
_HANZI = "升级流程数据客户会议发布项目团队系统迁移索引向量检索"


def _english(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + rng.choice(".!?")


def _chinese(rng: random.Random, chars: int) -> str:
    return "".join(rng.choice(_HANZI) for _ in range(chars)) + rng.choice("。！？")


def _mixed_document(seed: int) -> str:
    rng = random.Random(seed)
    parts = ["# Title"]
    for number in range(10):
        parts.append(f"## Section {number}")
        for _ in range(rng.randint(0, 9)):
            parts.append(" ".join(
                _english(rng, rng.randint(3, 40)) if rng.random() < 0.5
                else _chinese(rng, rng.randint(5, 60)) for _ in range(rng.randint(1, 20))))
        if rng.random() < 0.3:
            parts.append("```python\n" + "\n\n".join(
                f"value_{line} = compute({line})" for line in range(rng.randint(5, 200))) + "\n```")
        if rng.random() < 0.3:
            parts.append(f"### Sub {number}\n\n" + _english(rng, rng.randint(20, 400)))
    return "\n\n".join(parts) + "\n"


def _overlap(previous: str, following: str) -> str:
    """The longest suffix of `previous` that `following` starts with."""
    probe = following[:8]
    start = previous.find(probe)
    while start != -1:
        if following.startswith(previous[start:]):
            return previous[start:]
        start = previous.find(probe, start + 1)
    return ""


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _assert_chunk_invariants(note: ParsedNote, chunks: list[ChunkDraft]) -> None:
    assert [chunk.chunk_index for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.content.strip()
        assert chunk.content == chunk.content.rstrip()
        assert chunk.token_count == tokens_count(chunk.content) <= MAX_TOKENS
        # Units never pass the target, so only the overlap takes a chunk beyond it.
        assert chunk.token_count <= TARGET_TOKENS + OVERLAP_TOKENS + 20
        assert chunk.content_hash == hashlib.sha256(chunk.content.encode("utf-8")).hexdigest()
    # Heading paths are unique in these documents, so consecutive chunks group by section.
    groups: list[list[ChunkDraft]] = []
    for chunk in chunks:
        if groups and groups[-1][0].heading_path == chunk.heading_path:
            groups[-1].append(chunk)
        else:
            groups.append([chunk])
    sections = [section for section in note.sections if section.body.strip()]
    assert [group[0].heading_path for group in groups] == [s.heading_path for s in sections]
    for section, group in zip(sections, groups):
        assert group[0].content.startswith(section.heading_source)
        assert group[0].content.strip() != section.heading_source.strip()
        assert all(chunk.content in section.source for chunk in group)
        rebuilt = group[0].content
        for previous, following in zip(group, group[1:]):
            shared = _overlap(previous.content, following.content)
            assert OVERLAP_TOKENS // 2 <= tokens_count(shared) <= OVERLAP_TOKENS + 20
            rebuilt += following.content[len(shared):]
        # Nothing lost and nothing repeated beyond the overlaps.
        assert _squeezed(rebuilt) == _squeezed(section.source)


@pytest.mark.parametrize("seed", range(8))
def test_mixed_english_chinese_documents_keep_every_chunk_invariant(seed):
    note = note_parse(text=_mixed_document(seed))
    chunks = note_chunk(note=note)
    _assert_chunk_invariants(note, chunks)
    assert any(len([c for c in chunks if c.heading_path == s.heading_path]) > 1
               for s in note.sections)


def test_paragraph_of_5000_tokens_without_punctuation_is_split_into_bounded_windows():
    rng = random.Random(1)
    paragraph = " ".join(rng.choice(_WORDS) for _ in range(5000))
    assert tokens_count(paragraph) >= 5000
    note = note_parse(text="# Big\n\n" + paragraph + "\n")
    chunks = note_chunk(note=note)
    _assert_chunk_invariants(note, chunks)
    assert 6 <= len(chunks) <= 10
    assert min(chunk.token_count for chunk in chunks) >= 400


def test_long_chinese_text_with_only_full_stops_splits_after_full_stops():
    rng = random.Random(2)
    text = "".join("".join(rng.choice(_HANZI) for _ in range(rng.randint(10, 80))) + "。"
                   for _ in range(300))
    note = note_parse(text="# 中文\n" + text)
    chunks = note_chunk(note=note)
    _assert_chunk_invariants(note, chunks)
    assert len(chunks) > 5
    assert all(chunk.content.endswith("。") for chunk in chunks)


def test_huge_fenced_code_block_is_split_under_the_maximum():
    code = "\n\n".join(f"result_{n} = transform(records[{n}], key='k{n}')" for n in range(1500))
    note = note_parse(text="# Code\n\n```python\n" + code + "\n```\n")
    chunks = note_chunk(note=note)
    _assert_chunk_invariants(note, chunks)
    assert len(chunks) > 10


def test_text_without_any_break_is_cut_under_the_maximum():
    note = note_parse(text="# Dense\n\n" + "😀🚀" * 2000 + "\n")
    chunks = note_chunk(note=note)
    assert len(chunks) > 3
    assert all(0 < chunk.token_count == tokens_count(chunk.content) <= MAX_TOKENS
               for chunk in chunks)
    assert chunks[0].content.startswith("# Dense\n")


def test_fenced_code_block_with_blank_lines_stays_in_one_chunk():
    rng = random.Random(3)
    code = "```sql\n" + "\n\n".join(f"SELECT {n} FROM t{n};" for n in range(60)) + "\n```"
    paragraphs = [_english(rng, 150) for _ in range(8)]
    note = note_parse(text="# Doc\n\n" + "\n\n".join(paragraphs[:4] + [code] + paragraphs[4:]))
    chunks = note_chunk(note=note)
    _assert_chunk_invariants(note, chunks)
    assert len(chunks) > 1
    assert any(code in chunk.content for chunk in chunks)


def test_heading_is_never_a_chunk_of_its_own_even_before_a_full_size_paragraph():
    rng = random.Random(6)
    words: list[str] = []
    # A paragraph that fits the target alone but not together with its heading line.
    while tokens_count(" ".join(words) + "\n\n") < TARGET_TOKENS - 1:
        words.append(rng.choice(_WORDS))
    long_paragraph = " ".join(words)
    assert tokens_count(long_paragraph + "\n\n") <= TARGET_TOKENS
    note = note_parse(text=f"## Heading\n\n{long_paragraph}\n\n{_english(rng, 300)}\n")
    chunks = note_chunk(note=note)
    _assert_chunk_invariants(note, chunks)
    assert chunks[0].content == f"## Heading\n\n{long_paragraph}"


def test_small_section_is_one_chunk_with_exact_content_and_links():
    chunks = note_chunk(note=note_parse(text="# Title\n\nHello [[Page|Shown]] and [[Other]].\n\n"))
    assert len(chunks) == 1
    chunk = chunks[0]
    assert chunk.content == "# Title\n\nHello [[Page|Shown]] and [[Other]]."
    assert (chunk.chunk_index, chunk.heading_path) == (0, ["Title"])
    assert chunk.wikilinks == ["Page", "Other"]
    assert chunk.wikilink_aliases == {"Page": ["Shown"]}
    assert chunk.token_count == tokens_count(chunk.content)


def test_heading_only_sections_yield_no_chunk():
    chunks = note_chunk(note=note_parse(text="# A\n## B\ntext under b\n## C\n\n### D\n   \n"))
    assert [(chunk.heading_path, chunk.content) for chunk in chunks] == [
        (["A", "B"], "## B\ntext under b")]


@pytest.mark.parametrize("text", ["", "   \n\n\t\n", "---\ntitle: Only\ntags: [x]\n---\n",
                                  "---\ntitle: Only\n---\n\n  \n"])
def test_empty_whitespace_and_frontmatter_only_notes_yield_no_chunks(text):
    assert note_chunk(note=note_parse(text=text)) == []


def test_text_before_first_heading_is_a_chunk_with_empty_heading_path():
    chunks = note_chunk(note=note_parse(text="---\na: 1\n---\n\nIntro text.\n\n# H\nBody.\n"))
    assert [(chunk.heading_path, chunk.content) for chunk in chunks] == [
        ([], "Intro text."), (["H"], "# H\nBody.")]


def test_setext_section_first_chunk_starts_with_raw_heading_lines():
    rng = random.Random(4)
    body = "\n\n".join(_english(rng, 120) for _ in range(12))
    note = note_parse(text="Overview\n========\n\n" + body + "\n")
    chunks = note_chunk(note=note)
    _assert_chunk_invariants(note, chunks)
    assert len(chunks) > 1
    assert chunks[0].content.startswith("Overview\n========\n")
    assert all(chunk.heading_path == ["Overview"] for chunk in chunks)


def test_h1_title_is_part_of_nested_heading_paths():
    chunks = note_chunk(note=note_parse(text="# Title\nintro\n### Deep\ntext\n"))
    assert [chunk.heading_path for chunk in chunks] == [["Title"], ["Title", "Deep"]]


def test_chunk_wikilinks_are_only_those_in_the_chunk_text():
    rng = random.Random(5)
    filler = "\n\n".join(_english(rng, 150) for _ in range(10))
    text = f"# Links\n\nStart [[First]] and `[[InCode]]`.\n\n{filler}\n\nEnd [[Last|Final]].\n"
    chunks = note_chunk(note=note_parse(text=text))
    assert len(chunks) > 2
    assert chunks[0].wikilinks == ["First"]
    assert chunks[-1].wikilinks == ["Last"]
    assert chunks[-1].wikilink_aliases == {"Last": ["Final"]}
    assert all(chunk.wikilinks == [] for chunk in chunks[1:-1])


def test_wikilinks_inside_a_split_code_block_are_ignored_in_every_chunk():
    code = "\n".join(f"link_{n} = '[[Target{n % 5}]]'  # [[Other]]" for n in range(1200))
    chunks = note_chunk(note=note_parse(text="# Code\n\n```\n" + code + "\n```\n\n[[Real]]\n"))
    assert len(chunks) > 3
    assert [chunk.wikilinks for chunk in chunks[:-1]] == [[]] * (len(chunks) - 1)
    assert chunks[-1].wikilinks == ["Real"]


def test_short_pages_keep_their_own_page_spans_and_only_a_nearly_empty_one_joins_the_next():
    from parsing.formats.base import Block

    pages = ["Cover", "The first finding is a copper grade of 1.2% over six metres.",
             "The second finding is a gold grade of 3 g/t over two metres.",
             "The third finding is that the zone stays open at depth."]
    text, offsets, position = "", [], 0
    for number, page in enumerate(pages, start=1):
        offsets.append((position, number))
        text += page + "\n\n"
        position = len(text)
    block = Block(text=text.rstrip(), heading_path=("Report",), pages=tuple(offsets))
    spans = [(chunk.page_start, chunk.page_end) for chunk in blocks_chunk(blocks=[block])]
    # The cover (one word) goes with page 2; every page with a sentence is its own chunk.
    assert spans == [(1, 2), (3, 3), (4, 4)]
