"""A conversation on a phone-width screen (390 px): started beside the Ask page, two questions
streamed into the thread, the follow-up's standalone query under it, feedback on an answer, and
nothing wider than the screen."""

from __future__ import annotations

import shutil

import pytest

from conversations.models import FEEDBACK_DOWN, Message
from tests.browser.conftest import NARROW, chrome, css, ingest, sign_in, wait
from tests.harness import ROOT

P1 = "客户 P1 工单应该怎么升级？"
P2_FOLLOW_UP = "那 P2 呢？"


@pytest.fixture
def phone(live_server, clean_tables):
    driver = chrome(NARROW)
    driver.base_url = live_server.url
    yield driver
    driver.quit()
    shutil.rmtree(driver._profile_dir, ignore_errors=True)


def test_a_conversation_on_a_phone(phone, account, clean_tables):
    from selenium.webdriver.support import expected_conditions as EC

    ingest(ROOT / "samples" / "acme-vault")
    account("ana", grants={"default": "reader"})
    sign_in(phone, "ana")
    phone.find_element(*css(".conversation-aside button[type=submit]")).click()
    wait(phone, EC.presence_of_element_located(css("#conversation-form")))
    phone.execute_script("window.__samePage = true;")

    def ask(question: str, count: int):
        box = phone.find_element(*css("#conversation-form textarea[name=question]"))
        box.send_keys(question)
        phone.find_element(*css("#conversation-submit")).click()
        wait(phone, lambda driver: len(driver.find_elements(
            *css('#thread .turn article.answer:not([data-look="streaming"])'))) == count)
        return phone.find_elements(*css("#thread .turn"))[-1]

    first = ask(P1, 1)
    assert first.find_elements(*css(".source-card"))
    assert not first.find_elements(*css(".searched-as"))
    follow_up = ask(P2_FOLLOW_UP, 2)
    searched = follow_up.find_element(*css(".searched-as")).text
    assert searched.startswith("searched as:") and "P2" in searched and "P1" not in searched
    assert follow_up.find_element(*css('article[data-look="answer"]'))
    assert follow_up.find_elements(*css(".source-card"))
    # Streamed into the page by its script; the title is the first question.
    assert phone.execute_script("return window.__samePage === true;")
    assert phone.find_element(*css("#conversation-title")).text == P1
    assert phone.find_element(*css("#conversation-form textarea")).get_attribute("value") == ""
    # Nothing is wider than the phone's screen.
    assert phone.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth;")
    # Thumbs down on the follow-up's answer, with an error type.
    follow_up.find_element(*css("select[name=error_type]")).send_keys("the right source")
    message_id = follow_up.find_element(*css("article.answer")).get_attribute("data-message-id")
    follow_up.find_element(*css('button[value="down"]')).click()
    wait(phone, EC.presence_of_element_located(css("#thread .feedback-done")))
    answer = Message.objects.get(pk=message_id)
    assert (answer.rating, answer.error_type) == (FEEDBACK_DOWN, "missing_source")
    # Read again, the thread is the same.
    phone.refresh()
    searched_again = wait(phone, EC.presence_of_element_located(css("#thread .searched-as")))
    assert searched_again.text == searched
    assert phone.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth;")
