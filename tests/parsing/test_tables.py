"""Tables cut by rows (parsing/tables.py): every chunk repeats the table's head, rows stay
whole, and hostile tables (100k rows, a row longer than a chunk, 10k columns) stay bounded."""

from __future__ import annotations

import hashlib
import math

from core.text_tokens import tokens_count
from parsing import tables
from parsing.chunking import MAX_TOKENS, blocks_chunk, note_chunk
from parsing.formats.base import Block
from parsing.markdown import note_parse

HEAD = "| Hole | From (m) | To (m) | Cu (%) |\n| --- | --- | --- | --- |"
CAPTION = "Table 4 Drill intervals of the 2023 campaign"
# What a table chunk may count beyond the target: the sum of its rows' counts is an estimate.
SLACK = 8


def grade_rows(count: int) -> list[str]:
    return [f"| ZK-{n:04d} | {n * 2} | {n * 2 + 2} | {n / 100:.2f} |" for n in range(count)]


def chunks_of(text: str):
    return note_chunk(note=note_parse(text=text))


def rows_after_head(content: str, head: str) -> list[str]:
    assert head in content
    return content[content.index(head) + len(head):].strip("\n").split("\n")


def test_every_chunk_of_a_long_table_repeats_its_head_and_holds_whole_rows_once():
    rows = grade_rows(300)
    chunks = chunks_of("# Drill report\n\n## Intervals\n\n" + HEAD + "\n" + "\n".join(rows) + "\n")
    assert len(chunks) > 5
    # The heading opens the first chunk (never a chunk of its own); the others open with the head.
    assert chunks[0].content.startswith("## Intervals\n\n" + HEAD + "\n")
    assert all(chunk.content.startswith(HEAD + "\n") for chunk in chunks[1:])
    seen = [row for chunk in chunks for row in rows_after_head(chunk.content, HEAD)]
    assert seen == rows
    for chunk in chunks:
        assert chunk.heading_path == ["Drill report", "Intervals"]
        assert chunk.token_count == tokens_count(chunk.content)
        assert chunk.token_count <= tables.TABLE_TARGET_TOKENS + SLACK
        assert chunk.content_hash == hashlib.sha256(chunk.content.encode()).hexdigest()


def test_a_caption_is_repeated_and_short_text_around_the_table_joins_its_chunks():
    prose = " ".join(f"Sentence {n} about the drilling campaign and its logistics." for n in
                     range(120))
    rows = grade_rows(120)
    text = (f"# Report\n\n{prose}\n\n{CAPTION}\n\n{HEAD}\n" + "\n".join(rows)
            + "\n\nGrades are length-weighted.\n")
    chunks = chunks_of(text)
    table = [chunk for chunk in chunks if "| --- |" in chunk.content]
    before = chunks[:len(chunks) - len(table)]
    # Long text before the table makes chunks of its own, without the caption.
    assert before and all(CAPTION not in chunk.content for chunk in before)
    assert before[0].content.startswith("# Report\n\nSentence 0")
    assert all(chunk.content.startswith(f"{CAPTION}\n\n{HEAD}\n") for chunk in table)
    assert [row for chunk in table for row in rows_after_head(chunk.content, HEAD)
            if row.startswith("| ZK-")] == rows
    # A short note after the table closes its last chunk instead of making a chunk of its own.
    assert table[-1].content.endswith(rows[-1] + "\n\nGrades are length-weighted.")


def test_a_table_within_the_target_stays_in_its_section_as_it_is():
    text = "# Contacts\n\nWho to call.\n\n" + HEAD + "\n" + "\n".join(grade_rows(3)) + "\n"
    (chunk,) = chunks_of(text)
    assert tokens_count(text) < tables.TABLE_TARGET_TOKENS
    assert chunk.content == text.strip()


def test_a_row_longer_than_a_chunk_is_cut_into_windows_that_each_follow_the_head():
    rows = grade_rows(20)
    notes = " ".join(f"core{n} shows chalcopyrite veinlets" for n in range(900))
    huge = f"| ZK-9999 | 0 | 400 | {notes} |"
    chunks = chunks_of("# Log\n\n" + HEAD + "\n" + "\n".join([*rows[:10], huge, *rows[10:]]))
    assert all(chunk.token_count <= MAX_TOKENS for chunk in chunks)
    assert all(HEAD in chunk.content for chunk in chunks)
    pieces = [chunk for chunk in chunks if "chalcopyrite" in chunk.content]
    assert len(pieces) >= 3
    # The windows hold the whole row between them, in order, and no other row.
    joined = " ".join(" ".join(rows_after_head(chunk.content, HEAD)) for chunk in pieces)
    assert joined.split() == huge.split()
    others = [row for chunk in chunks if chunk not in pieces
              for row in rows_after_head(chunk.content, HEAD)]
    assert others == rows


def test_a_table_of_100k_rows_is_cut_in_one_pass_into_equal_row_groups():
    # Every row counts the same tokens: six digits are two tokens whatever they are.
    rows = [f"| {n:06d} | ok |" for n in range(100_000)]
    assert len({tokens_count(row) for row in rows[:1000:37]}) == 1
    head = "| id | state |\n| --- | --- |"
    chunks = chunks_of(head + "\n" + "\n".join(rows) + "\n")
    per_chunk = tables.rows_budget(tokens_count(head + "\n")) // (tokens_count(rows[0]) + 1)
    assert len(chunks) == math.ceil(len(rows) / per_chunk)
    assert all(chunk.content.startswith(head + "\n") for chunk in chunks)
    assert [row for chunk in chunks for row in rows_after_head(chunk.content, head)] == rows


def test_a_head_of_10k_columns_is_not_repeated_and_every_chunk_stays_bounded():
    columns = 10_000
    head = ("| " + " | ".join(f"c{n}" for n in range(columns)) + " |\n|"
            + "---|" * columns)
    rows = ["| " + " | ".join(f"v{row}x{n}" for n in range(columns)) + " |" for row in range(2)]
    text = "# Wide\n\n" + head + "\n" + "\n".join(rows) + "\n"
    chunks = chunks_of(text)
    assert all(chunk.token_count <= MAX_TOKENS for chunk in chunks)
    assert sum("| c0 |" in chunk.content for chunk in chunks) == 1
    assert "".join("".join(chunk.content.split()) for chunk in chunks) == "".join(text.split())


def test_wikilinks_of_a_table_chunk_are_those_of_its_head_and_rows():
    rows = [f"| [[Hole {n}]] | {n} | logged by [[Geologist {n % 7}]] |" for n in range(80)]
    head = "| Hole | Depth | Note ([[Logging manual]]) |\n| --- | --- | --- |"
    chunks = chunks_of("# Holes\n\n" + head + "\n" + "\n".join(rows) + "\n")
    assert len(chunks) > 2
    for chunk in chunks:
        numbers = [int(row.split("[[Hole ")[1].split("]]")[0])
                   for row in rows_after_head(chunk.content, head)]
        assert set(chunk.wikilinks) == ({"Logging manual"} | {f"Hole {n}" for n in numbers}
                                        | {f"Geologist {n % 7}" for n in numbers})


def test_a_table_block_with_pages_is_cut_by_rows_and_each_chunk_names_its_rows_pages():
    """A table block as a document format gives it (parsing/formats/base.py Block.table):
    not cut at page breaks, each piece after the caption and header, its pages those of its
    own rows."""
    rows = grade_rows(200)
    text = f"{CAPTION}\n\n{HEAD}\n" + "\n".join(rows)
    page_two = text.index(rows[100])
    chunks = blocks_chunk(blocks=[Block(text=text, heading_path=("Assays",), table=True,
                                        pages=((0, 1), (page_two, 2)))])
    assert len(chunks) > 2
    assert all(chunk.content.startswith(f"{CAPTION}\n\n{HEAD}\n") for chunk in chunks)
    assert [row for chunk in chunks for row in rows_after_head(chunk.content, HEAD)] == rows
    for chunk in chunks:
        numbers = {int(row[5:9]) for row in rows_after_head(chunk.content, HEAD)}
        expected = {1 if n < 100 else 2 for n in numbers}
        assert (chunk.page_start, chunk.page_end) == (min(expected), max(expected))
