"""Ruled tables of a PDF, found by pdfplumber (pdfminer.six, MIT) from the lines drawn on a page.

Only pages where PDFium saw enough path objects to draw a grid are opened here: pdfplumber
parses a page far slower than PDFium, and a page without lines has no ruled table to find. The
import is lazy, so a process that never reads a ruled PDF never loads pdfminer. A table comes
back as its page, its bounding box (PDF points, top-left origin) and its rows of cell text;
its page's text keeps the cells as PDFium read them, so search is unchanged by detection.
"""

from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass

# Bounds on what one file may add: a spreadsheet printed to 500 pages is not 500 review tasks.
TABLES_MAX = 50
ROWS_MAX = 200
COLUMNS_MAX = 30
CELL_MAX_CHARS = 200
# A page drawing more lines and boxes than this is not searched for tables: pdfplumber's time
# grows faster than their number (measured: 3,000 boxes 1.3 s, 20,000 boxes 21 s).
PAGE_EDGES_MAX = 5_000
# Table detection of one document stops after this long (pages left are not searched): a file
# of thousands of ruled pages must not hold an ingest for hours.
SECONDS_MAX = 30.0
_SPACE = re.compile(r"\s+")
_LINES = {"vertical_strategy": "lines", "horizontal_strategy": "lines"}


@dataclass(frozen=True)
class DetectedTable:
    page: int  # 1-based
    index: int  # the table's place on its page, from 0
    bbox: tuple[float, float, float, float]  # x0, top, x1, bottom
    rows: tuple[tuple[str, ...], ...]


def tables_find(data: bytes, *, pages: list[int]) -> tuple[list[DetectedTable], list[str]]:
    """The ruled tables on `pages` (1-based) of the PDF `data`, and warnings for pages that
    could not be read; at most TABLES_MAX tables of at most ROWS_MAX rows and COLUMNS_MAX
    columns each, on pages of at most PAGE_EDGES_MAX lines and boxes, for SECONDS_MAX at most.
    A table needs two rows and two columns."""
    if not pages:
        return [], []
    import pdfplumber

    found: list[DetectedTable] = []
    warnings: list[str] = []
    started = time.monotonic()
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for number in pages:
            if len(found) >= TABLES_MAX or number > len(pdf.pages):
                break
            if time.monotonic() - started > SECONDS_MAX:
                warnings.append(f"tables were searched for {SECONDS_MAX:.0f} s; pages from "
                                f"{number} on were not searched")
                break
            page = pdf.pages[number - 1]
            try:
                edges = len(page.rects) + len(page.lines) + len(page.curves)
                if edges > PAGE_EDGES_MAX:
                    warnings.append(f"page {number} draws {edges} lines and boxes (more than "
                                    f"{PAGE_EDGES_MAX}): its tables were not searched")
                    continue
                tables = page.find_tables(table_settings=_LINES)
                cells = [table.extract() for table in tables]
            except Exception as exc:  # pdfminer raises many types on damaged pages
                warnings.append(f"tables of page {number} could not be read "
                                f"({type(exc).__name__}: {exc})")
                continue
            finally:
                page.close()
            for table, rows in zip(tables, cells, strict=True):
                clean = _rows_clean(rows)
                if len(clean) < 2 or max(len(row) for row in clean) < 2:
                    continue
                found.append(DetectedTable(
                    page=number, index=sum(1 for t in found if t.page == number),
                    bbox=tuple(round(float(value), 1) for value in table.bbox),  # type: ignore[arg-type]
                    rows=clean))
                if len(found) >= TABLES_MAX:
                    break
    return found, warnings


def _rows_clean(rows: list[list[str | None]]) -> tuple[tuple[str, ...], ...]:
    """Cells as one-line text within the bounds; empty rows dropped."""
    clean = []
    for row in rows[:ROWS_MAX]:
        cells = tuple(_SPACE.sub(" ", cell or "").strip()[:CELL_MAX_CHARS]
                      for cell in row[:COLUMNS_MAX])
        if any(cells):
            clean.append(cells)
    return tuple(clean)


def table_markdown(rows: tuple[tuple[str, ...], ...]) -> str:
    """A table's rows as a Markdown table, its first row the header."""
    width = max(len(row) for row in rows)

    def line(row: tuple[str, ...]) -> str:
        cells = [cell.replace("|", "\\|") for cell in row] + [""] * (width - len(row))
        return "| " + " | ".join(cells) + " |"

    return "\n".join([line(rows[0]), "|" + " --- |" * width, *map(line, rows[1:])])
