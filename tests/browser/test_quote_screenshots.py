"""Screenshots of a verified quote for docs/screenshots/: an answer whose first source is a block
of two sections of the sample index note, cited by its best chunk (the runbooks section) while
the answer quotes the policies section — its card names that section and renders the quote's
Markdown, wikilinks as links — and the source view that card opens, with the quote marked in
the chunk that holds it.

Skipped unless LOCALRAG_SCREENSHOTS names the folder to write to (the answer is the configured
LLM_PROVIDER's: the offline `fake` one unless the environment names another):

    LOCALRAG_SCREENSHOTS=docs/screenshots make test \
        PYTEST_ARGS="tests/browser/test_quote_screenshots.py"
"""

from __future__ import annotations

import pytest

from knowledge.models import Chunk
from tests.browser.conftest import (
    DESKTOP,
    css,
    ingest,
    screenshot_dir,
    screenshot_save,
    sign_in,
    wait,
)
from tests.harness import ROOT

QUESTION = "ACME 知识库索引里列出了哪些运维手册？"
QUOTED_SECTION = "政策 Policies"

pytestmark = pytest.mark.skipif(screenshot_dir() is None,
                                reason="set LOCALRAG_SCREENSHOTS=<folder> to take screenshots")


def test_screenshots_of_a_quote_and_its_source(browser, account, clean_tables):
    from selenium.webdriver.support import expected_conditions as EC

    folder = screenshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    ingest(ROOT / "samples" / "acme-vault")
    account("ana", grants={"default": "reader"})
    sign_in(browser, "ana")
    browser.find_element(*css("#id_question")).send_keys(QUESTION)
    browser.find_element(*css("#ask-submit")).click()
    answer = wait(browser, EC.presence_of_element_located(
        css('#answer article[data-look="answer"]')))
    card = answer.find_element(*css("#source-1"))
    # What the pictures are to show: the card names the quote's section, not the best chunk's.
    assert QUOTED_SECTION in card.find_element(*css(".card-meta")).text
    assert card.find_elements(*css(".card-quote a.wikilink"))
    screenshot_save(browser, folder / "quote-ask-desktop.png", size=DESKTOP)

    href = card.find_element(*css("a.card-title")).get_attribute("href")
    browser.get(href)
    mark = wait(browser, EC.presence_of_element_located(css(".chunk.current mark.quote")))
    chunk_id = int(href.split("/chunks/")[1].split("/")[0])
    assert QUOTED_SECTION in Chunk.objects.get(pk=chunk_id).heading_path
    assert mark.text
    screenshot_save(browser, folder / "quote-source-desktop.png", size=DESKTOP)


EXTRACTIVE_QUESTION = "客户提交的 P1 工单如何升级？"


def test_screenshots_of_an_extractive_answer_and_a_quote_on_its_page(
        browser, account, clean_tables, config_override, tmp_path):
    """The offline extractive answerer's answer to the P1 question (the whole timeline, every
    line cited), and a PDF manual whose block joins three pages while the answer quotes page 1:
    the card names page 1 and the source view marks the quote there."""
    from selenium.webdriver.support import expected_conditions as EC

    from tests.answering.battery_manual import QUESTION as BATTERY_QUESTION
    from tests.answering.battery_manual import SAFETY, manual_write

    folder = screenshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    config_override(llm_provider="extractive")
    ingest(ROOT / "samples" / "acme-vault")
    manual_write(tmp_path / "manuals")
    account("ana", grants={"default": "reader"})
    sign_in(browser, "ana")

    def asked(question: str):
        field = browser.find_element(*css("#id_question"))
        field.clear()
        field.send_keys(question)
        browser.find_element(*css("#ask-submit")).click()
        return wait(browser, EC.presence_of_element_located(
            css('#answer article[data-look="answer"]')))

    answer = asked(EXTRACTIVE_QUESTION)
    text = answer.find_element(*css(".answer-body")).text
    assert "T+0" in text and "T+2 小时" in text
    screenshot_save(browser, folder / "extractive-ask-desktop.png", size=DESKTOP)

    browser.get(browser.current_url.split("#")[0])
    card = asked(BATTERY_QUESTION).find_element(*css("#source-1"))
    assert "p. 1" in card.find_element(*css(".card-meta")).text
    browser.get(card.find_element(*css("a.card-title")).get_attribute("href"))
    mark = wait(browser, EC.presence_of_element_located(css(".chunk.current mark.quote")))
    assert mark.text in SAFETY
    screenshot_save(browser, folder / "quote-page-source-desktop.png", size=DESKTOP)
