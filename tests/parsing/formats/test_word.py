"""DOCX extraction: heading paths from heading styles, tables as Markdown whose every piece
repeats the caption and header row, and broken files refused by name."""

from __future__ import annotations

import pytest

from core.text_tokens import tokens_count
from parsing.chunking import MAX_TOKENS, blocks_chunk
from parsing.formats import word
from parsing.formats.base import ExtractOptions, FormatRejected
from tests.parsing.formats.files import docx_bytes

OPTIONS = ExtractOptions()
HEADER = ["Hole", "From (m)", "To (m)", "Cu (%)", "Au (g/t)"]


def grade_rows(count: int) -> list[list[str]]:
    return [HEADER] + [[f"ZK-{index:04d}", f"{index * 2}", f"{index * 2 + 2}",
                        f"{index / 100:.2f}", f"{index / 40:.2f}"] for index in range(count)]


def extract(parts, **kwargs):
    return word.extract(docx_bytes(parts, **kwargs), name="reports/Drill Report.docx",
                        options=OPTIONS)


def test_nested_headings_give_heading_paths_and_a_lone_heading_no_chunk():
    extracted = extract([
        ("heading", 1, "Exploration"),
        ("p", "Overview of the campaign."),
        ("heading", 2, "Geochemistry"),
        ("p", "Soil anomalies over the ridge."),
        ("heading", 3, "Copper"),
        ("p", "Cu up to 850 ppm."),
        ("heading", 2, "Drilling"),
        ("heading", 3, "Empty section"),
        ("heading", 2, "Logistics"),
        ("p", "Camp at 3,200 m."),
    ], title="Campaign 2024")
    assert extracted.title == "Campaign 2024" and extracted.page_count is None
    chunks = blocks_chunk(blocks=extracted.blocks)
    assert [(chunk.heading_path, chunk.content) for chunk in chunks] == [
        (["Exploration"], "Exploration\n\nOverview of the campaign."),
        (["Exploration", "Geochemistry"], "Geochemistry\n\nSoil anomalies over the ridge."),
        (["Exploration", "Geochemistry", "Copper"], "Copper\n\nCu up to 850 ppm."),
        (["Exploration", "Logistics"], "Logistics\n\nCamp at 3,200 m."),
    ]
    assert all(chunk.page_start is None and chunk.page_end is None for chunk in chunks)


def test_without_a_title_the_file_name_is_the_title():
    assert extract([("p", "Body.")]).title == "Drill Report"


def test_a_table_spanning_chunks_repeats_caption_and_header_in_every_piece():
    extracted = extract([
        ("heading", 1, "Assays"),
        ("p", "Results of the 2024 campaign."),
        ("caption", "Table 3 Grades by interval"),
        ("table", grade_rows(150)),
        ("p", "Grades are length-weighted."),
    ])
    chunks = blocks_chunk(blocks=extracted.blocks)
    tables = [chunk for chunk in chunks if "| --- |" in chunk.content]
    assert len(tables) >= 3
    header = "| Hole | From (m) | To (m) | Cu (%) | Au (g/t) |\n| --- | --- | --- | --- | --- |"
    seen = []
    for chunk in tables:
        assert chunk.content.startswith("Table 3 Grades by interval\n\n" + header)
        assert chunk.heading_path == ["Assays"]
        assert chunk.token_count <= MAX_TOKENS
        assert tokens_count(chunk.content) == chunk.token_count
        seen += [line.split(" | ")[0][2:] for line in chunk.content.splitlines()[4:]]
    # Every row once, in order, and the caption is not repeated as ordinary text.
    assert seen == [f"ZK-{index:04d}" for index in range(150)]
    texts = [chunk.content for chunk in chunks if chunk not in tables]
    assert texts == ["Assays\n\nResults of the 2024 campaign.", "Grades are length-weighted."]
    assert extracted.facts == {"tables": 1}


def test_a_row_longer_than_a_chunk_is_cut_into_windows_that_each_repeat_caption_and_header():
    rows = grade_rows(30)
    log = " ".join(f"interval {index} shows chalcopyrite veinlets" for index in range(700))
    rows[15][4] = log
    chunks = blocks_chunk(blocks=extract([("caption", "Table 2 Logged intervals"),
                                          ("table", rows)]).blocks)
    header = "| Hole | From (m) | To (m) | Cu (%) | Au (g/t) |\n| --- | --- | --- | --- | --- |"
    assert all(chunk.content.startswith(f"Table 2 Logged intervals\n\n{header}\n")
               for chunk in chunks)
    assert all(chunk.token_count <= MAX_TOKENS for chunk in chunks)
    windows = [chunk.content.split(header, 1)[1] for chunk in chunks
               if "chalcopyrite" in chunk.content]
    assert len(windows) >= 3
    assert " ".join(windows).split() == f"| ZK-0014 | 28 | 30 | 0.14 | {log} |".split()


def test_a_small_table_without_caption_is_one_chunk_and_pipes_are_escaped():
    extracted = extract([("table", [["Name", "Note"], ["A|B", "multi\nline"]])])
    (chunk,) = blocks_chunk(blocks=extracted.blocks)
    assert chunk.content == "| Name | Note |\n| --- | --- |\n| A\\|B | multi line |"


@pytest.mark.parametrize("data, reason", [
    (b"PK\x03\x04 not really a zip", "not a valid DOCX file"),
    (b"\xd0\xcf\x11\xe0 an old .doc or an encrypted file", "not a valid DOCX file"),
])
def test_broken_files_are_refused_by_name(data: bytes, reason: str):
    with pytest.raises(FormatRejected, match=reason):
        word.extract(data, name="bad.docx", options=OPTIONS)


def test_a_zip_that_is_not_a_word_document_is_refused():
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "not word")
    with pytest.raises(FormatRejected, match="not a valid DOCX file"):
        word.extract(buffer.getvalue(), name="zip.docx", options=OPTIONS)
