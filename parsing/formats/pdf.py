"""PDF: text per page with pypdfium2 (PDFium, BSD/Apache), pypdf as the fallback for files
PDFium cannot open. PyMuPDF is not used: its AGPL licence would bind every user of the service.

Each page's text is kept with its 1-based page number (the number a PDF viewer's page counter
shows), so every chunk knows the pages it came from. Headings come from the outline
(bookmarks): a bookmark starts a new heading section where its title appears on its page, or at
the top of that page. A page with almost no text and an image over most of it is a scanned
page: with the `ocr` extra it is rendered and recognised; without it the run says which pages
were left out and how to include them.
"""

from __future__ import annotations

import io
import math
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from parsing.formats import ocr, pdf_tables
from parsing.formats.base import (
    Block,
    Extracted,
    ExtractOptions,
    FormatRejected,
    TextBudget,
    heading_push,
    paragraph_breaks,
    pdf_date,
    properties_clean,
    title_from_name,
)

if TYPE_CHECKING:
    from pypdf import PdfReader

FORMAT = "pdf"
ENCRYPTED = ("PDF is encrypted with a password; not indexed (save an unprotected copy to index "
             "it)")
# A page with fewer visible characters than this has no usable text layer.
SCANNED_MAX_CHARS = 20
# ... and is a scan when images cover at least this share of it.
SCANNED_MIN_IMAGE_COVER = 0.5
# A rendered page for OCR stays under this many pixels (an A0 plan at 200 dpi would be 60 M).
OCR_MAX_PIXELS = 12_000_000
# Rendering a page decodes each image on it whole, whatever the size of the render: a 1.5 MB PDF
# holding a 40,000 x 40,000 image would take 1.6 GB before anything is scaled down. A page with
# an image of more pixels than this (an A4 scan at 600 dpi has 35 M) is not rendered, for OCR or
# as a page image.
IMAGE_MAX_PIXELS = 50_000_000
PAGE_SEPARATOR = "\n\n"
# A page drawing at least this many paths (lines, rectangles) may hold a ruled table.
RULED_MIN_PATHS = 4
# A line at the top or bottom of at least this share of the pages (and of 3 or more) is a
# running header or footer ("Survey Report · page 3"): it is dropped from every page.
RUNNING_LINE_SHARE = 0.6
RUNNING_LINE_DEPTH = 2  # lines looked at from each end of a page
_NEWLINE = re.compile(r"\r\n?")
# PDFium marks soft hyphens and unknown glyphs with control characters; none is text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_SPACE = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class _Bookmark:
    level: int  # 0 for a top-level bookmark
    title: str
    page: int  # 0-based page index


def extract(data: bytes, *, name: str, options: ExtractOptions) -> Extracted:
    try:
        import pypdfium2 as pdfium
    except ImportError:  # pragma: no cover - a dependency of the default install
        return _pypdf_extract(data, name=name, options=options, cause=None)
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise FormatRejected(ENCRYPTED) from None
        return _pypdf_extract(data, name=name, options=options, cause=str(exc))
    try:
        extracted, ruled, page_texts = _pdfium_extract(document, name=name, options=options)
    finally:
        document.close()
    extracted.tables, warnings = pdf_tables.tables_find(data, pages=ruled)
    extracted.warnings.extend(warnings)
    for table in extracted.tables:
        extracted.page_texts.setdefault(table.page, page_texts[table.page - 1])
    return extracted


def _pdfium_extract(document: Any, *, name: str,
                    options: ExtractOptions) -> tuple[Extracted, list[int], list[str]]:
    """The document's text, the pages that draw enough lines to hold a ruled table, and the
    text of each page."""
    import pypdfium2.raw as pdfium_c

    total = len(document)
    info = document.get_metadata_dict()
    extracted = Extracted(format=FORMAT, title=_title(info.get("Title"), name), page_count=total,
                          properties=_properties(info))
    extracted.facts["extractor"] = "pypdfium2"
    kept = _page_limit(total, options, extracted)
    texts: list[str] = []
    scanned_skipped: list[int] = []
    ruled: list[int] = []
    reviewed = dict(options.page_texts)
    budget = TextBudget(options)
    for index in range(kept):
        if index + 1 in reviewed:
            texts.append(budget.paragraphs_take(budget.take(_clean(reviewed[index + 1]))))
            continue
        page = document[index]
        try:
            if _paths(page, pdfium_c) >= RULED_MIN_PATHS:
                ruled.append(index + 1)
            textpage = page.get_textpage()
            try:
                text = _clean(textpage.get_text_range())
            finally:
                textpage.close()
            if _visible(text) < SCANNED_MAX_CHARS and _image_cover(page, pdfium_c) >= \
                    SCANNED_MIN_IMAGE_COVER:
                text = _scanned_page(page, index + 1, options, extracted, scanned_skipped)
        finally:
            page.close()
        texts.append(budget.paragraphs_take(budget.take(text)))
    _scans_report(scanned_skipped, extracted, options)
    bookmarks = [mark for mark in _pdfium_bookmarks(document) if mark.page < kept]
    extracted.facts["outline"] = bool(bookmarks)
    extracted.blocks = _blocks(running_lines_strip(texts, headings=_titles(bookmarks)),
                               bookmarks)
    for number in extracted.ocr_confidence:
        extracted.page_texts[number] = texts[number - 1]
    return extracted, ruled, texts


def _paths(page: Any, pdfium_c: Any) -> int:
    """How many path objects (lines, rectangles) the page draws, counted up to RULED_MIN_PATHS."""
    count = 0
    for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=3):
        count += 1
        if count >= RULED_MIN_PATHS:
            break
    return count


def _pdfium_bookmarks(document: Any) -> list[_Bookmark]:
    marks = []
    for bookmark in document.get_toc():
        destination = bookmark.get_dest()
        page = destination.get_index() if destination is not None else None
        title = _SPACE.sub(" ", bookmark.get_title() or "").strip()
        if page is not None and title:
            marks.append(_Bookmark(level=bookmark.level, title=title, page=page))
    return marks


def _image_cover(page: Any, pdfium_c: Any) -> float:
    """The share of the page that image objects cover (overlaps counted once per image)."""
    width, height = page.get_size()
    if width <= 0 or height <= 0:
        return 0.0
    covered = 0.0
    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3):
        left, bottom, right, top = image.get_bounds()
        covered += (max(0.0, min(right, width) - max(left, 0.0))
                    * max(0.0, min(top, height) - max(bottom, 0.0)))
    return min(1.0, covered / (width * height))


def page_image_oversized(page: Any) -> tuple[int, int] | None:
    """(width, height) of the first image on `page` with more than IMAGE_MAX_PIXELS pixels, read
    from its dictionary without decoding it; None when every image is within the bound."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3):
        try:
            width, height = image.get_px_size()
        except pdfium.PdfiumError:  # an image PDFium cannot size, it will not decode either
            continue
        if width * height > IMAGE_MAX_PIXELS:
            return width, height
    return None


def _scanned_page(page: Any, number: int, options: ExtractOptions, extracted: Extracted,
                  skipped: list[int]) -> str:
    """The recognised text of a scanned page, or "" with the page recorded as skipped."""
    if not (options.ocr and ocr.ocr_available()) or not ocr.page_take():
        skipped.append(number)
        return ""
    oversized = page_image_oversized(page)
    if oversized is not None:
        extracted.warnings.append(
            f"scanned page {number} holds a {oversized[0]:,} x {oversized[1]:,}-pixel image, more "
            f"than the {IMAGE_MAX_PIXELS:,} pixels a page may be rendered with; the page is left "
            "out")
        return ""
    width, height = page.get_size()
    scale = ocr.RENDER_DPI / 72
    scale = min(scale, math.sqrt(OCR_MAX_PIXELS / max(1.0, width * height * scale * scale))
                * scale)
    try:
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            text, confidence = ocr.image_recognise(bitmap.to_pil())
        finally:
            bitmap.close()
    except Exception as exc:  # the recogniser's runtime: one bad page must not lose the file
        extracted.warnings.append(f"OCR of scanned page {number} failed ({type(exc).__name__}: "
                                  f"{exc}); the page is left out")
        return ""
    if confidence is not None:
        extracted.ocr_confidence[number] = confidence
    return _clean(text)


def _scans_report(skipped: list[int], extracted: Extracted, options: ExtractOptions) -> None:
    """One warning per file naming the scanned pages left out, and why."""
    if extracted.ocr_confidence:
        extracted.facts["ocr_pages"] = sorted(extracted.ocr_confidence)
        extracted.facts["ocr_confidence"] = ocr.confidence_mean(extracted.ocr_confidence.values())
    if not skipped:
        return
    pages = pages_display(skipped)
    extracted.facts["ocr_skipped_pages"] = skipped
    if not options.ocr:
        reason, advice = "disabled", "OCR is turned off (RAG_OCR=off)"
    elif not ocr.ocr_available():
        reason = "not_installed"
        advice = (f"install the OCR extra ({ocr.INSTALL_HINT}) and run `rag ingest` again to "
                  "index them")
    else:
        reason = "run_cap"
        advice = ("this run's OCR page budget (RAG_OCR_MAX_PAGES) is spent; the next "
                  "`rag ingest` goes on with them")
    extracted.facts["ocr_skipped_reason"] = reason
    extracted.warnings.append(f"scanned {'page' if len(skipped) == 1 else 'pages'} {pages} "
                              f"without a text layer not indexed: {advice}")


def pages_display(pages: list[int]) -> str:
    """[1, 2, 3, 7] → "1–3, 7"."""
    runs: list[list[int]] = []
    for page in sorted(pages):
        if runs and page == runs[-1][1] + 1:
            runs[-1][1] = page
        else:
            runs.append([page, page])
    return ", ".join(str(low) if low == high else f"{low}–{high}" for low, high in runs)


def _pypdf_extract(data: bytes, *, name: str, options: ExtractOptions,
                   cause: str | None) -> Extracted:
    """The fallback for files PDFium refuses: pypdf reads many damaged files it cannot."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    prefix = f"PDFium could not open it ({cause.rstrip('.')}); " if cause else ""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FormatRejected(ENCRYPTED)
        total = len(reader.pages)
    except FileNotDecryptedError:
        raise FormatRejected(ENCRYPTED) from None
    except FormatRejected:
        raise
    except Exception as exc:  # pypdf raises many types for damaged files
        raise FormatRejected(f"{prefix}pypdf could not read it either "
                             f"({type(exc).__name__}: {exc}); the file may be damaged or "
                             "truncated") from None
    info: dict[str, str] = {}
    try:
        info = {str(key).lstrip("/"): value for key, value in (reader.metadata or {}).items()
                if isinstance(value, str)}
    except (PdfReadError, AttributeError, KeyError, ValueError, TypeError):
        pass
    extracted = Extracted(format=FORMAT, title=_title(info.get("Title"), name), page_count=total,
                          properties=_properties(info))
    extracted.facts["extractor"] = "pypdf"
    kept = _page_limit(total, options, extracted)
    texts = []
    empty = []
    budget = TextBudget(options)
    for index in range(kept):
        try:
            text = _clean(reader.pages[index].extract_text() or "")
        except Exception as exc:
            extracted.warnings.append(f"page {index + 1} could not be read "
                                      f"({type(exc).__name__}); left out")
            text = ""
        if _visible(text) < SCANNED_MAX_CHARS:
            empty.append(index + 1)
        texts.append(budget.paragraphs_take(budget.take(text)))
    if empty:
        extracted.warnings.append(f"{'page' if len(empty) == 1 else 'pages'} "
                                  f"{pages_display(empty)} gave (almost) no text")
    bookmarks = _pypdf_bookmarks(reader)
    extracted.facts["outline"] = bool(bookmarks)
    bookmarks = [mark for mark in bookmarks if mark.page < kept]
    extracted.blocks = _blocks(running_lines_strip(texts, headings=_titles(bookmarks)),
                               bookmarks)
    if not any(block.text.strip() for block in extracted.blocks):
        raise FormatRejected(f"{prefix}no text could be read from it")
    return extracted


def _pypdf_bookmarks(reader: PdfReader) -> list[_Bookmark]:
    marks: list[_Bookmark] = []

    def walk(items: list[Any], level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:
                continue
            title = _SPACE.sub(" ", str(getattr(item, "title", "") or "")).strip()
            if title and page is not None and page >= 0:
                marks.append(_Bookmark(level=level, title=title, page=page))

    try:
        walk(reader.outline, 0)
    except Exception:
        return []
    return marks


def _page_limit(total: int, options: ExtractOptions, extracted: Extracted) -> int:
    if total > options.pdf_max_pages:
        extracted.warnings.append(
            f"PDF has {total:,} pages; only the first {options.pdf_max_pages:,} were indexed "
            "(RAG_PDF_MAX_PAGES)")
        extracted.facts["pages_left_out"] = total - options.pdf_max_pages
        return options.pdf_max_pages
    return total


def running_lines_strip(texts: list[str], *, headings: frozenset[str] = frozenset()
                        ) -> list[str]:
    """The pages without their running headers and footers: a line among the first or last
    RUNNING_LINE_DEPTH lines of a page that recurs there on most pages, the page's own number
    (if any) aside. Repeated on every page, such a line would be in every chunk. A line that
    is a bookmark's title is a heading and always kept."""
    edges = [[(index, line, _running_key(line, number)) for index, line in _edge_lines(text)]
             for number, text in enumerate(texts, start=1)]
    pages = sum(bool(lines) for lines in edges)
    counts: dict[str, int] = {}
    for lines in edges:
        for key in {key for _, _, key in lines}:
            counts[key] = counts.get(key, 0) + 1
    needed = max(3, math.ceil(pages * RUNNING_LINE_SHARE))
    running = {key for key, count in counts.items() if count >= needed}
    if not running:
        return texts
    stripped = []
    for text, lines in zip(texts, edges):
        drop = {index for index, line, key in lines if key in running
                and _SPACE.sub(" ", line).strip() not in headings}
        kept = [line for index, line in enumerate(text.split("\n")) if index not in drop]
        stripped.append("\n".join(kept).strip("\n"))
    return stripped


def _titles(bookmarks: list[_Bookmark]) -> frozenset[str]:
    return frozenset(mark.title for mark in bookmarks)


def _edge_lines(text: str) -> list[tuple[int, str]]:
    """(index, line) of the first and last non-blank lines of a page."""
    lines = [(index, line) for index, line in enumerate(text.split("\n")) if line.strip()]
    if len(lines) < 2 * RUNNING_LINE_DEPTH + 2:
        return []  # a page this short has no body to tell its header or footer from
    return lines[:RUNNING_LINE_DEPTH] + lines[-RUNNING_LINE_DEPTH:]


def _running_key(line: str, page: int) -> str:
    """The line with the page's own number (its first occurrence) made neutral."""
    line = _SPACE.sub(" ", line).strip()
    number = str(page)
    for match in _DIGITS.finditer(line):
        if match.group() == number:
            return line[:match.start()] + "#" + line[match.end():]
    return line


def _blocks(texts: list[str], bookmarks: list[_Bookmark]) -> list[Block]:
    """Cut the pages' text into heading sections at the bookmarks, each block knowing where
    every page it covers begins."""
    page_starts = []
    position = 0
    for text in texts:
        page_starts.append(position)
        position += len(text) + len(PAGE_SEPARATOR)
    full = PAGE_SEPARATOR.join(texts)
    cuts: list[tuple[int, tuple[str, ...]]] = [(0, ())]
    headings: list[tuple[int, str]] = []
    for mark in bookmarks:
        heading = heading_push(headings, mark.level, mark.title)
        page_start = page_starts[mark.page]
        page_end = page_start + len(texts[mark.page])
        floor = max(page_start, cuts[-1][0])
        found = _title_find(full, mark.title, floor, page_end)
        cut = found if found is not None else floor
        between = _SPACE.sub(" ", full[cuts[-1][0]:cut]).strip()
        if cut == cuts[-1][0] or (len(cuts) > 1 and between == cuts[-1][1][-1]):
            # Nothing but the previous heading's own title since it began: the deeper heading
            # names the section (a heading alone makes no chunk, as in a note).
            cuts[-1] = (cuts[-1][0], heading)
        else:
            cuts.append((cut, heading))
    blocks = []
    for number, (start, heading) in enumerate(cuts):
        end = cuts[number + 1][0] if number + 1 < len(cuts) else len(full)
        text = full[start:end]
        if not text.strip():
            continue
        first = bisect_right(page_starts, start) - 1
        pages = [(0, first + 1)]
        for index in range(first + 1, len(page_starts)):
            if page_starts[index] >= end:
                break
            pages.append((page_starts[index] - start, index + 1))
        blocks.append(Block(text=text, heading_path=heading, pages=tuple(pages),
                            breaks=paragraph_breaks(text, lines=True)))
    return blocks


def _title_find(full: str, title: str, start: int, end: int) -> int | None:
    """Where `title` begins in full[start:end], its words allowed to wrap across lines."""
    words = [re.escape(word) for word in title.split()]
    if not words:
        return None
    match = re.compile(r"\s+".join(words)).search(full, start, end)
    if match is None:
        return None
    line_start = full.rfind("\n", start, match.start()) + 1
    # A numbered heading ("2.1 Sampling") may carry its number outside the bookmark's title.
    return line_start if line_start >= start and len(
        full[line_start:match.start()].strip()) <= 8 else match.start()


def _properties(info: dict[str, str]) -> dict[str, str]:
    """The PDF's document information dictionary as frontmatter fields (dates as ISO)."""
    return properties_clean({
        "title": info.get("Title"), "author": info.get("Author"),
        "subject": info.get("Subject"), "keywords": info.get("Keywords"),
        "created": pdf_date(info.get("CreationDate")), "modified": pdf_date(info.get("ModDate"))})


def _title(value: str | None, name: str) -> str:
    value = _SPACE.sub(" ", value or "").strip()
    return value or title_from_name(name)


def _clean(text: str) -> str:
    return _CONTROL.sub("", _NEWLINE.sub("\n", text))


def _visible(text: str) -> int:
    return len(text) - sum(character.isspace() for character in text)
