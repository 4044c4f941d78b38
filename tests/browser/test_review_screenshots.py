"""A screenshot of the review page for docs/screenshots/: a scanned page of a weighing log read
by OCR below RAG_OCR_REVIEW_CONFIDENCE, its page image beside the recognised text with the
numbers with units marked for a spot check, and the maintainer's accept, fix and exclude.

Skipped unless LOCALRAG_SCREENSHOTS names the folder to write to:

    LOCALRAG_SCREENSHOTS=docs/screenshots make test \
        PYTEST_ARGS="tests/browser/test_review_screenshots.py"
"""

from __future__ import annotations

import pytest

from parsing.formats import ocr
from tests.browser.conftest import DESKTOP, css, screenshot_dir, screenshot_save, sign_in, wait
from tests.parsing.formats.files import scanned_pdf_bytes

LINES = ["Core shed weighing log", "Sample S-1: 12 kg, length 35 mm", "Sample S-2: 8.5 kg",
         "Moisture 4% at 220 V dryer"]

pytestmark = [
    pytest.mark.skipif(screenshot_dir() is None,
                       reason="set LOCALRAG_SCREENSHOTS=<folder> to take screenshots"),
    pytest.mark.skipif(not ocr.ocr_available(), reason="the OCR extra is not installed"),
]


def test_screenshot_of_a_review_task(browser, account, clean_tables, config_override, tmp_path):
    from selenium.webdriver.support import expected_conditions as EC

    from core.config import get_config
    from knowledge.bases import kb_create
    from knowledge.ingest import IngestRequest, vault_ingest
    from review.models import ReviewTask

    folder = screenshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    config_override(rag_ocr_review_confidence=1.0)
    vault = tmp_path / "scans"
    vault.mkdir()
    (vault / "weighing-log.pdf").write_bytes(scanned_pdf_bytes([LINES]))
    kb_create(slug="field", name="Field reports")
    vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0, knowledge_base="field"),
                 config=get_config())
    task = ReviewTask.objects.get()
    account("mo", grants={"field": "maintainer"})
    sign_in(browser, "mo")
    browser.get(f"{browser.current_url.split('/workbench/')[0]}/workbench/review/{task.id}/")
    image = wait(browser, EC.presence_of_element_located(css("img.page-image")))
    wait(browser, lambda driver: driver.execute_script(
        "return arguments[0].complete && arguments[0].naturalWidth > 0;", image))
    assert browser.find_elements(*css(".page-text mark"))
    assert browser.find_element(*css("textarea#id_text"))
    screenshot_save(browser, folder / "review-page-desktop.png", size=DESKTOP)
