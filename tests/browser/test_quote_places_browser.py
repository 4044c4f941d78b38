"""In a real browser: an answer quoting page 1 of a manual whose block is cited by page 3 shows a
card naming page 1, and its link opens the source view at page 1's chunk with the quote marked
and scrolled into view; a wikilink in an answer opens its note's source view."""

from __future__ import annotations

import pytest

from knowledge.models import Chunk
from tests.answering.battery_manual import QUESTION, SAFETY, manual_write
from tests.api.http import INDEX_QUESTION
from tests.browser.conftest import css, ingest, sign_in, wait
from tests.harness import ROOT

IN_VIEW = ("const r = arguments[0].getBoundingClientRect();"
           "return r.top >= 0 && r.bottom <= window.innerHeight;")


@pytest.fixture
def reader(account):
    account("ana", grants={"default": "reader"})
    return "ana"


def ask(browser, question: str):
    from selenium.webdriver.support import expected_conditions as EC

    browser.find_element(*css("#id_question")).send_keys(question)
    browser.find_element(*css("#ask-submit")).click()
    return wait(browser, EC.presence_of_element_located(
        css('#answer article[data-look="answer"]')))


def test_the_quote_opens_marked_in_the_chunk_and_page_it_comes_from(browser, reader, tmp_path):
    from selenium.webdriver.support import expected_conditions as EC

    manual_write(tmp_path / "vault")
    sign_in(browser, reader)
    answer = ask(browser, QUESTION)
    card = answer.find_element(*css("#source-1"))
    assert SAFETY in card.find_element(*css(".card-quote")).text
    assert card.find_element(*css(".card-meta")).text == "battery.pdf › Safety · p. 1 · default"
    card.find_element(*css("a.card-title")).click()
    safety = Chunk.objects.get(relative_path="battery.pdf", chunk_index=0)
    wait(browser, EC.url_contains(f"/workbench/chunks/{safety.pk}/?quote_start="))
    mark = wait(browser, EC.presence_of_element_located(css(".chunk.current mark.quote")))
    assert mark.text == SAFETY
    wait(browser, lambda driver: driver.execute_script(IN_VIEW, mark))
    facts = browser.find_element(*css("dl.facts")).text
    assert "Pages\np. 1" in facts and "Section\nSafety" in facts
    assert browser.find_element(*css("#page-title")).text == "Page 1"


def test_a_wikilink_in_the_answer_opens_its_notes_source(browser, reader, clean_tables):
    from selenium.webdriver.support import expected_conditions as EC

    ingest(ROOT / "samples" / "acme-vault")
    sign_in(browser, reader)
    answer = ask(browser, INDEX_QUESTION)
    link = answer.find_element(*css(".answer-body a.wikilink"))
    assert link.text == "Data Handling Policy"
    assert "[[" not in answer.find_element(*css(".answer-body")).text
    link.click()
    policy = Chunk.objects.get(relative_path="policies/Data Handling Policy.md", chunk_index=0)
    wait(browser, EC.url_contains(f"/workbench/chunks/{policy.pk}/"))
    assert browser.find_element(*css("main h1")).text
