"""The source view: the cited chunk highlighted among its neighbours, a PDF's page text and
picture, 404 for what the person may not read, and document text always escaped."""

from __future__ import annotations

import io
import re
import struct
from pathlib import Path

import pytest

from access.models import Grant
from core.config import get_config
from knowledge.bases import kb_create
from knowledge.ingest import IngestRequest, vault_ingest
from knowledge.models import Chunk, Document
from tests.parsing.formats.files import pdf_bytes

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(1)>"


def long_page(number: int) -> str:
    """About two chunks of text, every sentence naming its page."""
    return " ".join(f"Page {number} sentence {index} about the Ridge {number} wolframite "
                    "survey grid." for index in range(60))


def short_page(number: int) -> str:
    # Nearly empty (under 12 tokens): the brief's three pages share one chunk.
    return f"Brief page {number}"


@pytest.fixture
def field(db, tmp_path) -> Path:
    """A `field` base: a four-page survey PDF (two chunks a page), a three-page brief PDF
    (one chunk over all its pages) and a note whose text carries markup."""
    folder = tmp_path / "field"
    folder.mkdir()
    (folder / "survey.pdf").write_bytes(pdf_bytes([long_page(n) for n in range(1, 5)],
                                                  title="Ridge survey"))
    (folder / "brief.pdf").write_bytes(pdf_bytes([short_page(n) for n in range(1, 4)]))
    (folder / "markup.md").write_text(f"# Markup\n\nThe note says {SCRIPT} and {IMAGE} "
                                      "as plain text.\n", encoding="utf-8")
    kb_create(slug="field", name="Field reports", sources=[str(folder)])
    vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
    return folder


@pytest.fixture
def field_reader(person, field):
    return person("fran", grants={"field": Grant.READER})


def chunk_of(name: str, index: int) -> Chunk:
    return Chunk.objects.get(relative_path=name, chunk_index=index)


def chunk_ids_linked(html: str) -> set[int]:
    return {int(number) for number in re.findall(r'href="/workbench/chunks/(\d+)/"', html)}


def test_the_source_view_needs_a_sign_in(client, field):
    response = client.get(f"/workbench/chunks/{chunk_of('survey.pdf', 0).id}/")
    assert response.status_code == 302 and "/workbench/login/" in response["Location"]


def test_the_cited_chunk_is_highlighted_between_two_neighbours_each_side(field_reader):
    cited = chunk_of("survey.pdf", 4)
    response = field_reader.get(f"/workbench/chunks/{cited.id}/")
    html = response.content.decode()
    assert response.status_code == 200
    current = re.search(r'<div class="chunk current" id="chunk-(\d+)" aria-current="true" '
                        r"data-scroll-into-view>(.*?)</div>", html, re.DOTALL)
    assert current is not None and int(current.group(1)) == cited.id
    assert current.group(2) == cited.content
    neighbours = {chunk_of("survey.pdf", index).id for index in (2, 3, 5, 6)}
    assert chunk_ids_linked(html) == neighbours
    assert html.count('<div class="chunk">') == 4
    for index in (2, 3, 5, 6):
        assert chunk_of("survey.pdf", index).content in html


def test_a_first_chunk_has_only_the_neighbours_after_it(field_reader):
    response = field_reader.get(f"/workbench/chunks/{chunk_of('survey.pdf', 0).id}/")
    assert chunk_ids_linked(response.content.decode()) == {
        chunk_of("survey.pdf", 1).id, chunk_of("survey.pdf", 2).id}


def test_the_header_names_document_base_path_format_and_pages(field_reader):
    cited = chunk_of("survey.pdf", 4)
    html = field_reader.get(f"/workbench/chunks/{cited.id}/").content.decode()
    assert "<h1>Ridge survey</h1>" in html
    assert 'href="/workbench/knowledge/field/">field</a>' in html
    assert "<code>survey.pdf</code>" in html
    assert "<dd>pdf · 4 pages</dd>" in html
    assert "<dt>Pages</dt><dd>p. 3</dd>" in html


def test_a_note_shows_its_heading_path_and_no_page(field_reader):
    cited = chunk_of("markup.md", 0)
    html = field_reader.get(f"/workbench/chunks/{cited.id}/").content.decode()
    assert "<dt>Section</dt><dd>Markup</dd>" in html
    assert "page-image" not in html and "Text of page" not in html


def test_a_pdf_chunk_shows_the_whole_text_of_its_page(field_reader):
    cited = chunk_of("survey.pdf", 4)  # the first chunk of page 3
    html = field_reader.get(f"/workbench/chunks/{cited.id}/").content.decode()
    page_text = re.search(r'<pre class="page-text">(.*?)</pre>', html, re.DOTALL).group(1)
    assert "Page 3 sentence 0 " in page_text and "Page 3 sentence 59 " in page_text
    assert "Page 2 sentence" not in page_text and "Page 4 sentence" not in page_text
    assert "Page 3 sentence 59 " not in cited.content  # more than the chunk: the page
    document = Document.objects.get(relative_path="survey.pdf")
    assert f'src="/workbench/documents/{document.id}/pages/3.png"' in html


def test_the_page_is_chosen_within_the_chunks_span(field_reader):
    cited = chunk_of("brief.pdf", 0)
    assert (cited.page_start, cited.page_end) == (1, 3)
    url = f"/workbench/chunks/{cited.id}/"
    second = field_reader.get(url, {"page": 2}).content.decode()
    assert "<h2 id=\"page-title\">Page 2</h2>" in second
    assert "Brief page 2" in re.search(r'<pre class="page-text">(.*?)</pre>', second,
                                       re.DOTALL).group(1)
    assert 'href="?page=1"' in second and 'href="?page=3"' in second
    for outside in (9, 0, "x"):
        page = field_reader.get(url, {"page": outside}).content.decode()
        assert "<h2 id=\"page-title\">Page 1</h2>" in page


def test_the_page_image_is_a_png_of_a_plausible_size(field_reader):
    document = Document.objects.get(relative_path="survey.pdf")
    response = field_reader.get(f"/workbench/documents/{document.id}/pages/3.png")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["Cache-Control"].startswith("private")
    png = response.content
    assert png[:8] == PNG_SIGNATURE and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    # A4 (595 × 842 points) at 110 dpi.
    assert abs(width - 909) <= 2 and abs(height - 1286) <= 2
    assert 5_000 < len(png) < 2_000_000
    # A real picture of the page (Pillow comes with fpdf2, a test dependency): white paper
    # with dark text on it.
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    assert image.size == (width, height) and image.mode == "RGB"
    darkest, lightest = image.convert("L").getextrema()
    assert lightest == 255 and darkest < 80


def test_a_page_out_of_range_or_a_document_that_is_no_pdf_has_no_image(field_reader):
    survey = Document.objects.get(relative_path="survey.pdf")
    note = Document.objects.get(relative_path="markup.md")
    for url in (f"/workbench/documents/{survey.id}/pages/5.png",
                f"/workbench/documents/{survey.id}/pages/0.png",
                f"/workbench/documents/{note.id}/pages/1.png",
                "/workbench/documents/999999/pages/1.png"):
        assert field_reader.get(url).status_code == 404, url


def test_a_file_gone_says_the_page_cannot_be_shown(field_reader, field):
    cited = chunk_of("survey.pdf", 4)
    (field / "survey.pdf").unlink()
    response = field_reader.get(f"/workbench/chunks/{cited.id}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "The page cannot be shown" in html and 'class="page-image"' not in html
    assert cited.content in html  # the indexed text is still there
    document = Document.objects.get(relative_path="survey.pdf")
    assert field_reader.get(f"/workbench/documents/{document.id}/pages/3.png").status_code == 404


def test_another_bases_chunk_and_page_are_404_like_missing_ones(person, field, sample_index):
    outsider = person("olga", grants={"default": Grant.READER})
    hidden = chunk_of("survey.pdf", 4)
    document = Document.objects.get(relative_path="survey.pdf")
    missing_chunk = outsider.get("/workbench/chunks/999999/")
    hidden_chunk = outsider.get(f"/workbench/chunks/{hidden.id}/")
    assert missing_chunk.status_code == hidden_chunk.status_code == 404
    assert b"Ridge" not in hidden_chunk.content
    hidden_page = outsider.get(f"/workbench/documents/{document.id}/pages/3.png")
    missing_page = outsider.get("/workbench/documents/999999/pages/3.png")
    assert hidden_page.status_code == missing_page.status_code == 404
    assert not hidden_page.content.startswith(PNG_SIGNATURE)
    # The same person reads their own base's chunks.
    own = Chunk.objects.filter(knowledge_base__slug="default").first()
    assert outsider.get(f"/workbench/chunks/{own.id}/").status_code == 200


def test_markup_in_a_note_is_shown_as_text(field_reader):
    cited = chunk_of("markup.md", 0)
    html = field_reader.get(f"/workbench/chunks/{cited.id}/").content.decode()
    assert SCRIPT not in html and IMAGE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def current_chunk_html(html: str) -> str:
    current = re.search(r'<div class="chunk current" id="chunk-\d+" aria-current="true"'
                        r"(?: data-scroll-into-view)?>(.*?)</div>", html, re.DOTALL)
    assert current is not None
    return current.group(1)


def test_a_quotes_offsets_mark_exactly_that_span_with_the_text_escaped(field_reader):
    from django.utils.html import escape

    cited = chunk_of("markup.md", 0)
    text = cited.content
    # A span holding the note's markup itself: escaped inside the <mark> as outside it.
    start, end = text.index("says"), text.index(" and")
    response = field_reader.get(f"/workbench/chunks/{cited.id}/",
                                {"quote_start": start, "quote_end": end})
    html = response.content.decode()
    assert response.status_code == 200
    assert current_chunk_html(html) == (
        f'{escape(text[:start])}<mark class="quote" id="quote" data-scroll-into-view>'
        f"{escape(text[start:end])}</mark>{escape(text[end:])}")
    assert text[start:end] == f"says {SCRIPT}"
    assert SCRIPT not in html and IMAGE not in html
    assert html.count("<mark") == 1 and html.count("data-scroll-into-view") == 1
    assert 'href="#quote">the highlighted passage</a> is what the answer quoted' in html
    # The page's policy still forbids inline script and style, and the mark needs neither.
    assert "'unsafe-inline'" not in response["Content-Security-Policy"]
    assert " style=" not in html and "<style" not in html


def test_a_quote_may_span_the_whole_chunk(field_reader):
    cited = chunk_of("brief.pdf", 0)
    html = field_reader.get(f"/workbench/chunks/{cited.id}/",
                            {"quote_start": 0, "quote_end": len(cited.content)}).content.decode()
    assert current_chunk_html(html).startswith('<mark class="quote"')
    assert current_chunk_html(html).endswith("</mark>")


@pytest.mark.parametrize("start, end", [
    ("", ""), ("abc", "5"), ("5", "5"), ("9", "3"), ("-1", "4"), ("0", "100000"),
    ("0", "9" * 5000), ("１", "３"), ("0x1", "9"), (" 1", "9"), ("1.0", "9"), ("2", None),
    (None, "9"),
])
def test_offsets_that_are_not_a_span_of_the_text_are_ignored(field_reader, start, end):
    from django.utils.html import escape

    cited = chunk_of("markup.md", 0)
    query = {name: value for name, value in (("quote_start", start), ("quote_end", end))
             if value is not None}
    response = field_reader.get(f"/workbench/chunks/{cited.id}/", query)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<mark" not in html
    assert current_chunk_html(html) == escape(cited.content)
    assert "data-scroll-into-view>" in html  # the chunk itself is scrolled to
