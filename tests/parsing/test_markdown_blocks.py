"""The jumping block parser gives exactly markdown-it's tokens, on every kind of block."""

from __future__ import annotations

import random

import pytest
from markdown_it import MarkdownIt

from parsing.markdown_blocks import block_parser, blocks_parse

REFERENCE = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
BLOCK_LINES = ["a", "b c", "# h", "## x", "- i", "* i", "+ i", "1. o", "2) o", "> q", ">", "```",
               "~~~", "---", "===", "***", "___", "<div>", "</div>", "<!-- c -->", "| a | b |",
               "|---|---|", "a | b", "    code", "\tt", "", "  ", "` a", "[x]: /u", "  - n",
               "   > q", "10. x", "-", "=", "#", "<p>", "中文 #tag", "a\\"]
PARAGRAPH_LINES = ["a", "b c", "  x", "\t", "", " ", "word  ", "` a", "中文", "&amp;", "   y",
                   "2. no", "a\\"]


def shape(tokens) -> list[tuple]:
    return [(t.type, t.tag, t.nesting, t.level, t.block, t.map, t.content, t.markup, t.info,
             t.children, t.hidden, t.attrs) for t in tokens]


def documents(lines: list[str], count: int, seed: int) -> list[str]:
    generator = random.Random(seed)
    texts = []
    for _ in range(count):
        text = "\n".join(generator.choice(lines) for _ in range(generator.randint(0, 12)))
        texts.append(text + "\n" if generator.random() < 0.3 else text)
    return texts


@pytest.mark.parametrize("seed", range(4))
def test_block_parser_matches_markdown_it(seed: int):
    for text in documents(BLOCK_LINES, 2500, seed):
        assert shape(block_parser().parse(text)) == shape(REFERENCE.parse(text)), text
        assert shape(blocks_parse(text)) == shape(REFERENCE.parse(text)), text


@pytest.mark.parametrize("seed", range(4))
def test_paragraphs_only_are_tokenised_exactly_as_markdown_it(seed: int):
    for text in documents(PARAGRAPH_LINES, 2500, seed):
        assert shape(blocks_parse(text)) == shape(REFERENCE.parse(text)), text


def test_a_long_paragraph_is_one_paragraph_token_with_its_lines():
    text = "` a\n" * 5000 + "\nlast paragraph\n"
    tokens = blocks_parse(text)
    assert [(t.type, t.map) for t in tokens if t.type != "paragraph_close"] == [
        ("paragraph_open", [0, 5000]), ("inline", [0, 5000]),
        ("paragraph_open", [5001, 5002]), ("inline", [5001, 5002])]
    assert shape(tokens) == shape(REFERENCE.parse(text))
