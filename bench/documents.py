"""Document ingest benchmark: PDF parsing speed, digital PDF ingest, and OCR seconds per page.

Prints one JSON line per measurement:
  parse_pdf        extract + chunk of generated digital PDFs (100 and 1,000 pages), no database
  ingest_sample    `rag ingest` of samples/geo-kb (documents/s, pages/s), cold and unchanged,
                   and cold without its scanned PDF (no OCR)
  ingest_big_pdf   `rag ingest` of a vault holding the generated 1,000-page PDF
  ocr              seconds per scanned page (rapidocr on CPU), when the OCR extra is installed

The ingest measurements run against DATABASE_URL (start it with `rag pg start && rag db init`);
--parse-only skips them. Needs fpdf2 (installed by `make test`) to generate the PDFs.

    .venv/bin/python bench/documents.py
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from _setup import ROOT, django_setup

WORDS = ("porphyry copper deposit alteration potassic phyllic propylitic anomaly soil "
         "sampling assay grade drill hole core recovery interval molybdenum gold breccia "
         "vein stockwork intrusion granodiorite magnetite chalcopyrite bornite").split()


def digital_pdf(pages: int, seed: int = 3) -> bytes:
    """A report-like PDF: a heading and ~350 words of paragraphs per page, an outline entry
    every ten pages."""
    from fpdf import FPDF

    rng = random.Random(seed)
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for page in range(pages):
        pdf.add_page()
        if page % 10 == 0:
            pdf.start_section(f"Chapter {page // 10 + 1}", level=0)
            pdf.cell(text=f"Chapter {page // 10 + 1}", new_x="LMARGIN", new_y="NEXT")
        for _ in range(5):
            words = " ".join(rng.choices(WORDS, k=70))
            pdf.multi_cell(0, 4.5, f"ZK-{rng.randrange(9999):04d}: {words}.",
                           new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def parse(data: bytes, pages: int) -> dict:
    from parsing.chunking import blocks_chunk
    from parsing.formats import pdf
    from parsing.formats.base import ExtractOptions

    started = time.perf_counter()
    extracted = pdf.extract(data, name="bench.pdf", options=ExtractOptions(ocr=False))
    extract_seconds = time.perf_counter() - started
    chunks = blocks_chunk(blocks=extracted.blocks)
    total = time.perf_counter() - started
    assert extracted.page_count == pages, extracted.page_count
    return {"measurement": "parse_pdf", "pages": pages, "bytes": len(data),
            "extract_seconds": round(extract_seconds, 3), "chunk_seconds": round(
                total - extract_seconds, 3), "seconds": round(total, 3),
            "pages_per_s": round(pages / total, 1), "chunks": len(chunks)}


def ingest(name: str, root: Path, pages: int) -> dict:
    from core.config import get_config
    from knowledge.ingest import IngestRequest, vault_ingest

    started = time.perf_counter()
    result = vault_ingest(IngestRequest(vault_path=root), config=get_config())
    elapsed = time.perf_counter() - started
    files = result.files_seen
    return {"measurement": name, "files": files, "pdf_pages": pages,
            "seconds": round(elapsed, 3), "documents_per_s": round(files / elapsed, 1),
            "pdf_pages_per_s": round(pages / elapsed, 1), "added": result.documents_added,
            "skipped": result.documents_skipped, "chunks_written": result.chunks_written,
            "ocr_pages": result.ocr_pages, "timings": result.timings}


def pdf_pages(root: Path) -> int:
    import pypdfium2

    total = 0
    for path in root.rglob("*.pdf"):
        document = pypdfium2.PdfDocument(path)
        total += len(document)
        document.close()
    return total


def ocr_seconds_per_page(data: bytes | None) -> dict | None:
    from parsing.formats import ocr, pdf
    from parsing.formats.base import ExtractOptions

    if not ocr.ocr_available():
        return None
    if data is None:
        from tests.parsing.formats.files import scanned_pdf_bytes

        data = scanned_pdf_bytes([[f"Drill hole ZK-{page:04d} core log, page {page}",
                                   "Copper grade 1.32 percent over 48 m"] for page in range(3)])
    started = time.perf_counter()
    ocr._engine()  # the model load, once per process, measured apart
    load = time.perf_counter() - started
    started = time.perf_counter()
    extracted = pdf.extract(data, name="scan.pdf", options=ExtractOptions())
    elapsed = time.perf_counter() - started
    pages = len(extracted.ocr_confidence)
    return {"measurement": "ocr", "pages": pages, "model_load_seconds": round(load, 3),
            "seconds_per_page": round(elapsed / max(1, pages), 3),
            "mean_confidence": (ocr.confidence_mean(extracted.ocr_confidence.values())
                                if pages else 0.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--parse-only", action="store_true",
                        help="only the parsing and OCR measurements (no database)")
    parser.add_argument("--big-pages", type=int, default=1000)
    args = parser.parse_args()
    django_setup()
    for pages in (100, args.big_pages):
        print(json.dumps(parse(digital_pdf(pages), pages)), flush=True)
    sample = ROOT / "samples" / "geo-kb"
    scans = sorted(sample.glob("*scan*.pdf")) if sample.is_dir() else []
    result = ocr_seconds_per_page(scans[0].read_bytes() if scans else None)
    if result is not None:
        print(json.dumps(result), flush=True)
    if args.parse_only:
        return
    from knowledge.vault_index import vault_forget

    work = Path(tempfile.mkdtemp(prefix="local-rag-bench-docs-"))
    try:
        copy = work / "geo-kb"
        shutil.copytree(sample, copy)
        pages = pdf_pages(copy)
        print(json.dumps(ingest("ingest_sample_cold", copy, pages)), flush=True)
        print(json.dumps(ingest("ingest_sample_unchanged", copy, pages)), flush=True)
        digital = work / "geo-kb-digital"  # the sample without its scan: no OCR in the time
        shutil.copytree(sample, digital, ignore=shutil.ignore_patterns("scans"))
        print(json.dumps(ingest("ingest_sample_digital_cold", digital, pdf_pages(digital))),
              flush=True)
        big = work / "big"
        big.mkdir()
        (big / "report.pdf").write_bytes(digital_pdf(args.big_pages))
        print(json.dumps(ingest("ingest_big_pdf", big, args.big_pages)), flush=True)
    finally:
        for folder in (work / "geo-kb", work / "geo-kb-digital", work / "big"):
            if folder.is_dir():
                vault_forget(vault_path=str(folder.resolve()))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
