"""Screenshots of every workbench page at a desktop and a narrow width, for docs/screenshots/.

Skipped unless LOCALRAG_SCREENSHOTS names the folder to write to:

    LOCALRAG_SCREENSHOTS=docs/screenshots make test PYTEST_ARGS="tests/browser/test_screenshots.py"

The pages show the two samples (acme-vault in `default`, geo-kb in `geo`), an answer, a
conversation with a follow-up, a PDF source with its page image, a lab run, an evaluation set
with two runs, and the traces; and the Ask page once more in the Chinese interface.
"""

from __future__ import annotations

import pytest

from access.callers import caller_for_user
from evaluation.runs import question_set_import, run_launch
from jobs.worker import Worker
from knowledge.bases import kb_create
from knowledge.models import Chunk
from tests.browser.conftest import (
    DESKTOP,
    NARROW,
    chrome,
    css,
    ingest,
    screenshot_dir,
    screenshot_save,
    wait,
)
from tests.browser.conftest import sign_in as browser_sign_in
from tests.harness import ROOT
from traces.models import Trace

QUESTION = "客户 P1 工单应该怎么升级？"
FOLLOW_UP = "那 P2 呢？"
LAB_QUERY = "ZK-0805 钻孔 Mo 品位"

pytestmark = pytest.mark.skipif(screenshot_dir() is None,
                                reason="set LOCALRAG_SCREENSHOTS=<folder> to take screenshots")


def test_screenshots_of_every_page(live_server, account, clean_tables):
    from selenium.webdriver.support import expected_conditions as EC

    folder = screenshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    ingest(ROOT / "samples" / "acme-vault")
    kb_create(slug="geo", name="Geological prospecting",
              description="Survey reports of a porphyry copper-gold project",
              sources=[str(ROOT / "samples" / "geo-kb")])
    ingest(ROOT / "samples" / "geo-kb")
    admin = account("admin", superuser=True)
    caller = caller_for_user(admin)
    questions = (ROOT / "eval" / "questions.yaml").read_text(encoding="utf-8")
    question_set = question_set_import(caller=caller, slug="default", name="acme questions",
                                       text=questions, source_name="questions.yaml")
    for top_k, retrieval in ((5, "vector"), (5, "hybrid")):
        run_launch(caller=caller, set_id=question_set.pk, top_k=top_k, retrieval=retrieval)
    Worker(poll_seconds=0.1).run(until_idle=True)
    assert set(question_set.runs.values_list("status", flat=True)) == {"done"}
    pdf_chunk = (Chunk.objects.filter(document__format="pdf", page_start__isnull=False,
                                      knowledge_base__slug="geo")
                 .order_by("document_id", "chunk_index")[2])

    for label, size in (("desktop", DESKTOP), ("narrow", NARROW)):
        driver = chrome(size)
        driver.base_url = live_server.url
        try:
            def shot(name: str, driver=driver, label=label, size=size) -> None:
                # A screenshot of an error page would document nothing.
                heading = driver.find_element(*css("main h1")).text
                assert "Not Found" not in heading and "Server Error" not in heading, heading
                screenshot_save(driver, folder / f"{name}-{label}.png", size=size)

            driver.get(f"{live_server.url}/workbench/login/")
            shot("login")
            browser_sign_in(driver, "admin")
            driver.find_element(*css("#id_question")).send_keys(QUESTION)
            driver.find_element(*css("#ask-submit")).click()
            wait(driver, EC.presence_of_element_located(
                css('#answer article[data-look="answer"]')))
            shot("ask")
            driver.find_element(*css(".conversation-aside button[type=submit]")).click()
            for count, question in enumerate((QUESTION, FOLLOW_UP), 1):
                driver.find_element(*css("#conversation-form textarea")).send_keys(question)
                driver.find_element(*css("#conversation-submit")).click()
                wait(driver, lambda d, count=count: len(d.find_elements(*css(
                    '#thread article.answer:not([data-look="streaming"])'))) == count)
            shot("conversation")
            driver.get(f"{live_server.url}/workbench/conversations/")
            shot("conversations")
            driver.get(f"{live_server.url}/workbench/chunks/{pdf_chunk.pk}/")
            wait(driver, lambda d: d.execute_script(
                "const i = document.querySelector('img.page-image');"
                "return !i || (i.complete && i.naturalWidth > 0);"))
            shot("source")
            driver.get(f"{live_server.url}/workbench/lab/")
            driver.find_element(*css("#lab-form textarea")).send_keys(LAB_QUERY)
            driver.find_element(*css("#lab-form button[type=submit]")).click()
            wait(driver, EC.presence_of_element_located(css("#lab-results .lab-stage")))
            shot("lab")
            driver.get(f"{live_server.url}/workbench/evaluation/?set={question_set.pk}")
            shot("evaluation")
            runs = list(question_set.runs.order_by("pk").values_list("pk", flat=True))
            driver.get(f"{live_server.url}/workbench/evaluation/compare/"
                       f"?run={runs[0]}&run={runs[1]}")
            shot("evaluation-compare")
            driver.get(f"{live_server.url}/workbench/knowledge/")
            shot("knowledge")
            driver.get(f"{live_server.url}/workbench/knowledge/geo/")
            shot("knowledge-base")
            driver.get(f"{live_server.url}/workbench/status/")
            shot("status")
            driver.get(f"{live_server.url}/workbench/traces/")
            shot("traces")
            trace = Trace.objects.filter(operation="ask_stream").order_by("-created_at").first()
            driver.get(f"{live_server.url}/workbench/traces/{trace.id}/")
            shot("trace")
        finally:
            driver.quit()
    # The Ask page as a browser set to Chinese gets it.
    driver = chrome(DESKTOP, lang="zh-CN")
    driver.base_url = live_server.url
    try:
        browser_sign_in(driver, "admin")
        driver.find_element(*css("#id_question")).send_keys(QUESTION)
        driver.find_element(*css("#ask-submit")).click()
        wait(driver, EC.presence_of_element_located(css('#answer article[data-look="answer"]')))
        assert driver.find_element(*css("main h1")).text == "提问"
        screenshot_save(driver, folder / "ask-zh-desktop.png", size=DESKTOP)
    finally:
        driver.quit()
