"""Upload a document in a real browser, watch its job until it is searchable, then find it."""

from __future__ import annotations

import threading
from pathlib import Path

from jobs.worker import Worker
from tests.browser.conftest import css, sign_in, wait
from tests.parsing.formats.files import pdf_bytes


def test_upload_watch_the_job_and_find_the_document(browser, account, tmp_path: Path,
                                                    clean_tables):
    from selenium.webdriver.support import expected_conditions as EC

    pdf = tmp_path / "tundra-survey.pdf"
    pdf.write_bytes(pdf_bytes([
        "Permafrost survey. The tundra borehole TB-77 reached frozen ground at 3.2 metres.",
        "Logistics. Helicopter slots are booked two weeks ahead of the tundra campaign.",
    ], title="Tundra survey 2026"))
    account("mo", grants={"default": "maintainer"})
    sign_in(browser, "mo")
    browser.get(f"{browser.base_url}/workbench/knowledge/default/")
    browser.find_element(*css("input[type=file][name=file]")).send_keys(str(pdf))
    browser.find_element(*css("form[enctype] button[type=submit]")).click()
    job = wait(browser, EC.presence_of_element_located(css(".job[data-status]")))
    assert job.get_attribute("data-status") in ("queued", "running")
    # The page polls the job while a worker (as `rag serve` runs one) does it.
    worker = Worker(poll_seconds=0.2, name="browser-test")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        done = wait(browser, EC.presence_of_element_located(
            css('.job[data-status="succeeded"]')))
        assert "searchable" in done.text
    finally:
        worker.stop()
        thread.join(timeout=30)
    browser.get(f"{browser.base_url}/workbench/ask/")
    browser.find_element(*css("#id_question")).send_keys(
        "At what depth did the tundra borehole TB-77 reach frozen ground?")
    browser.find_element(*css("#ask-submit")).click()
    answer = wait(browser, EC.presence_of_element_located(
        css('#answer article[data-look="answer"]')))
    titles = [card.text for card in answer.find_elements(*css(".card-title"))]
    assert "Tundra survey 2026" in titles
    meta = answer.find_element(*css(".source-card .card-meta")).text
    assert "p. 1" in meta
