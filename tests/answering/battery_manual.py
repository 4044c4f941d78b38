"""A three-page PDF manual, one section a page, whose pages retrieval joins into one block cited
by page 3 while the answer quotes page 1: the documents of the quote-place tests of answering
and of the workbench."""

from __future__ import annotations

from pathlib import Path

from core.config import get_config
from knowledge.ingest import IngestRequest, vault_ingest
from tests.parsing.formats.files import pdf_bytes

QUESTION = "What should I do with a swollen battery?"
SAFETY = "A swollen battery must be taken out of service at once and kept in a fireproof box."
ANSWER = "Take a swollen battery out of service at once [1]."
PAGES = [SAFETY, "The warranty covers the device for two years.",
         "Charging a swollen battery is dangerous: charge a swollen battery never, "
         "and charge any battery with the supplied charger only."]
SECTIONS = ["Safety", "Warranty", "Charging"]


def manual_write(folder: Path, pages: list[str] = PAGES) -> None:
    """battery.pdf in `folder`, its pages `pages` under SECTIONS, ingested."""
    folder.mkdir(exist_ok=True)
    (folder / "battery.pdf").write_bytes(pdf_bytes(
        pages, outline=[(index, 0, section) for index, section in enumerate(SECTIONS)]))
    vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
