"""Answers are untrusted Markdown: links only to http(s) and this site's paths, never a
script, raw HTML or an image; `[n]` of an existing citation links to its source card."""

from __future__ import annotations

import pytest

from workbench.rendering import answer_html


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
