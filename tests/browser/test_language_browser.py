"""The workbench in Chinese in a browser set to Chinese: sign in, ask, read the answer, and
switch to English and back with the switch in the top bar."""

from __future__ import annotations

import shutil

import pytest

from tests.browser.conftest import chrome, css, ingest, sign_in, wait
from tests.harness import ROOT

QUESTION = "客户 P1 工单应该怎么升级？"


@pytest.fixture
def chinese_browser(live_server, clean_tables):
    driver = chrome(lang="zh-CN")
    driver.base_url = live_server.url
    yield driver
    driver.quit()
    shutil.rmtree(driver._profile_dir, ignore_errors=True)


def test_sign_in_and_ask_in_the_chinese_interface(chinese_browser, account, clean_tables):
    from selenium.webdriver.support import expected_conditions as EC

    browser = chinese_browser
    ingest(ROOT / "samples" / "acme-vault")
    account("ana", grants={"default": "researcher"})  # sees the confidence
    browser.get(f"{browser.base_url}/workbench/login/")
    assert browser.find_element(*css("main h1")).text == "登录"
    assert browser.find_element(*css("html")).get_attribute("lang") == "zh-hans"
    sign_in(browser, "ana")
    assert browser.find_element(*css("main h1")).text == "提问"
    assert browser.find_element(*css("#ask-submit")).text == "提问"
    browser.find_element(*css("#id_question")).send_keys(QUESTION)
    browser.find_element(*css("#ask-submit")).click()
    answer = wait(browser, EC.presence_of_element_located(
        css('#answer article.answer:not([data-look="streaming"])')))
    assert answer.find_element(*css(".answer-head .badge")).text in ("回答", "知识库中没有答案")
    assert "置信度" in answer.find_element(*css(".answer-head")).text
    assert answer.find_element(*css(".sources-title")).text == "来源"
    assert "这个回答有帮助吗？" in answer.find_element(*css(".answer-foot")).text
    # The switch: English from now on, on every page, then back to Chinese.
    browser.find_element(*css('.language-switch button[value="en"]')).click()
    wait(browser, lambda driver: driver.find_element(*css("main h1")).text == "Ask")
    browser.get(f"{browser.base_url}/workbench/conversations/")
    assert browser.find_element(*css("main h1")).text == "Conversations"
    browser.find_element(*css('.language-switch button[value="zh-hans"]')).click()
    wait(browser, lambda driver: driver.find_element(*css("main h1")).text == "对话")
