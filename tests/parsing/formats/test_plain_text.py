"""Plain text: UTF-8, UTF-8 with BOM, GB18030, and a clear refusal otherwise."""

from __future__ import annotations

import pytest

from parsing.chunking import blocks_chunk
from parsing.formats import plain_text
from parsing.formats.base import ExtractOptions, FormatRejected

TEXT = "第一段：斑岩型铜矿的找矿标志。\r\n\r\n第二段：钻孔 ZK-1042 见矿。\n"


def extract(data: bytes):
    return plain_text.extract(data, name="notes/野外记录.txt", options=ExtractOptions())


@pytest.mark.parametrize("data, encoding", [
    (TEXT.encode("utf-8"), "utf-8"),
    (b"\xef\xbb\xbf" + TEXT.encode("utf-8"), "utf-8-sig"),
    (TEXT.encode("gb18030"), "gb18030"),
])
def test_each_encoding_gives_the_same_text(data: bytes, encoding: str):
    extracted = extract(data)
    assert extracted.facts == {"encoding": encoding}
    assert extracted.title == "野外记录"
    (chunk,) = blocks_chunk(blocks=extracted.blocks)
    assert chunk.content == "第一段：斑岩型铜矿的找矿标志。\n\n第二段：钻孔 ZK-1042 见矿。"
    assert chunk.page_start is None and chunk.heading_path == []


def test_long_text_is_cut_at_paragraphs():
    paragraphs = [f"Paragraph {index}: " + "ore grade sampling " * 60 for index in range(12)]
    (block,) = extract("\n\n".join(paragraphs).encode()).blocks
    chunks = blocks_chunk(blocks=[block])
    assert len(chunks) > 2
    # Each chunk after the first starts with the overlap, then a whole paragraph.
    for chunk in chunks:
        assert chunk.content.rstrip().endswith("sampling")


@pytest.mark.parametrize("data, reason", [
    (b"\x81\x30\x81", "neither UTF-8 nor GB18030"),  # a GB18030 four-byte sequence cut short
    (b"\xef\xbb\xbf\xff\xfe", "neither UTF-8 nor GB18030"),
    (b"binary\x00\x01\x02 data", "control characters"),
])
def test_undecodable_or_binary_files_are_refused(data: bytes, reason: str):
    with pytest.raises(FormatRejected, match=reason):
        extract(data)


def test_an_empty_file_has_no_blocks():
    assert extract(b"  \n\n ").blocks == []
