"""Answers are untrusted Markdown: links only to http(s) and this site's paths, never a
script, raw HTML or an image; `[n]` of an existing citation links to its source card."""

from __future__ import annotations

import pytest

from workbench.rendering import WikiLink, answer_html, excerpt_html, quote_html, wikilinks_in


def render(text: str, citations: int = 0) -> str:
    return str(answer_html(text, citation_count=citations)).strip()


def test_a_web_link_is_a_link_that_leaves_without_the_referrer():
    assert render("See [the guide](https://example.org/guide).") == (
        '<p>See <a href="https://example.org/guide" rel="noopener noreferrer nofollow">'
        "the guide</a>.</p>")


def test_a_link_to_this_site_keeps_its_path_and_needs_no_rel():
    assert render("[ask](/workbench/ask/)") == '<p><a href="/workbench/ask/">ask</a></p>'


@pytest.mark.parametrize("text", ["[x](javascript:alert(1))", "[x](//evil.example/)",
                                  "[x](data:text/html,hi)", "<javascript:alert(1)>",
                                  "[x](<//evil.example>)"])
def test_other_links_stay_text(text):
    assert "<a " not in render(text)


def test_a_backslash_path_cannot_become_another_origin():
    # Browsers read "/\evil" as "//evil"; the link must keep it escaped.
    assert render("[x](/\\evil.example)") == '<p><a href="/%5Cevil.example">x</a></p>'


def test_raw_html_and_images_come_out_as_text():
    html = render("<script>alert(1)</script> <img src=x onerror=alert(1)> ![i](https://x/i.png)")
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_citation_markers_link_only_to_existing_cards():
    assert render("Escalate [1], not [3].", citations=2) == (
        '<p>Escalate <a class="cite" href="#source-1">[1]</a>, not [3].</p>')


# Source cards and Lab entries: the start of a chunk, rendered like an answer.

def card(text: str, *, limit: int = 400, markdown: bool = True) -> str:
    return str(excerpt_html(text, limit=limit, markdown=markdown)).strip()


def test_a_notes_markdown_is_rendered_with_headings_as_bold_lines():
    html = card("## P1 定义\n\n- **P2（High）**：核心功能严重受损\n- `rag ingest`")
    assert "##" not in html and "**" not in html
    assert '<p class="excerpt-heading"><strong>P1 定义</strong></p>' in html
    assert "<li><strong>P2（High）</strong>：核心功能严重受损</li>" in html
    assert "<code>rag ingest</code>" in html
    assert "<h2" not in html


def test_an_excerpt_is_as_safe_as_an_answer():
    html = card("<script>alert(1)</script> [x](javascript:alert(1)) ![i](https://x/i.png) "
                "<img src=x onerror=alert(1)>")
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
    assert "&lt;script&gt;" in html
    # An image is at most a link to where it is, never fetched by the page.
    assert '<a href="https://x/i.png" rel="noopener noreferrer nofollow">i</a>' in html


def test_wikilinks_read_as_the_text_they_show_and_tables_as_tables():
    html = card("见 [[API Latency Runbook]] 和 [[Atlas CRM#Pricing|价格]]。\n\n"
                "| 优先级 | 响应 |\n| --- | --- |\n| P1 | 15 分钟 |")
    assert "[[" not in html
    assert "见 API Latency Runbook 和 价格。" in html
    assert "<td>15 分钟</td>" in html


def test_a_long_excerpt_is_cut_at_a_space_and_says_so():
    html = card("**Bold start** " + "word " * 100, limit=60)
    assert html.endswith("…</p>")
    assert "<strong>Bold start</strong>" in html
    assert "wor…" not in html and "word…" in html


def test_other_formats_stay_plain_escaped_text_on_one_line():
    html = card("# Not a heading\n**kept as typed** <b>x</b>", markdown=False)
    assert html == "<p># Not a heading **kept as typed** &lt;b&gt;x&lt;/b&gt;</p>"


# Wikilinks and quotes.

LINKS = {WikiLink("Data Handling Policy"): "/workbench/chunks/8/",
         WikiLink("Atlas CRM", "Pricing"): "/workbench/chunks/12/",
         WikiLink("javascript:alert(1)"): "javascript:alert(1)",
         WikiLink("Elsewhere"): "//evil.example/"}


@pytest.mark.parametrize("text, html", [
    ("[[Data Handling Policy]]", '<a class="wikilink" href="/workbench/chunks/8/">'
                                 "Data Handling Policy</a>"),
    ("[[Atlas CRM#Pricing|价格]]", '<a class="wikilink" href="/workbench/chunks/12/">价格</a>'),
    ("[[Data Handling Policy|the <b>policy</b>]]",
     '<a class="wikilink" href="/workbench/chunks/8/">the &lt;b&gt;policy&lt;/b&gt;</a>'),
    ("[[No Such Note]]", "No Such Note"),
    ("[[Atlas CRM]]", "Atlas CRM"),  # resolved only with the heading it was written with
    ("[[javascript:alert(1)]]", "javascript:alert(1)"),
    ("[[Elsewhere|x]]", "x"),
    ("`[[Data Handling Policy]]`", "<code>[[Data Handling Policy]]</code>"),
])
def test_a_wikilink_links_only_to_the_source_view_the_page_resolved(text, html):
    assert render_linked(text) == f"<p>{html}</p>"
    assert str(quote_html(text, links=LINKS)) == html


def render_linked(text: str) -> str:
    return str(answer_html(text, citation_count=0, links=LINKS)).strip()


def test_a_quote_renders_bold_and_code_inline_and_markup_as_text():
    assert str(quote_html("**P2（High）**：用 `rag ask`。<script>alert(1)</script>")) == (
        "<strong>P2（High）</strong>：用 <code>rag ask</code>。"
        "&lt;script&gt;alert(1)&lt;/script&gt;")


def test_the_wikilinks_of_a_text_are_found_outside_code_once_each():
    text = ("[[A]] and [[B#H|b]] `[[C]]` [[A]]\n\n```\n[[D]]\n```\n\n| x | y |\n| --- | --- |\n"
            "| [[E\\|e]] | 1 |")
    assert wikilinks_in(text) == [WikiLink("A"), WikiLink("B", "H"), WikiLink("E")]
