"""The workbench in headless Chromium at a desktop's width (1280 px) and a phone's (390 px,
emulated as a phone: Chromium's own windows are never narrower than 500 px): the menu folds
behind a button on the phone, the 404 and 403 pages wear the workbench's look, the lab's long
paths wrap after their separators and leave no column empty when rerank is off, and a
conversation's count beside the thread follows the answers. Nothing is wider than the screen.

Uses tests/browser/conftest.py's Chromium (skipped with its reason where it is missing)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from access.models import Grant
from knowledge.bases import kb_get
from tests.browser.conftest import (
    DESKTOP,
    MISSING,
    NARROW,
    PASSWORD,
    chrome,
    css,
    ingest,
    sign_in,
    wait,
)
from tests.harness import ROOT

pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"browser tests skipped: {MISSING}")

PAGE_FITS = "return document.documentElement.scrollWidth <= window.innerWidth;"
PAST_THE_RIGHT = "return arguments[0].getBoundingClientRect().right > window.innerWidth + 0.5;"
# The lines of each piece of a path's text (<wbr> splits the text into one node per piece).
PIECE_LINES = """
const lines = [];
for (const node of arguments[0].childNodes) {
  if (node.nodeType !== Node.TEXT_NODE) continue;
  const range = document.createRange();
  range.selectNodeContents(node);
  const tops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
  lines.push([node.textContent, [...tops]]);
}
return lines;
"""
DEEP_PATH = "engineering/platform/observability/runbooks/2026/weekend-rotation.md"


@pytest.fixture(params=[DESKTOP, NARROW], ids=["1280px", "390px"])
def screen(request, live_server, clean_tables):
    with sized_chrome(request.param, live_server) as driver:
        yield driver


@pytest.fixture
def phone(live_server, clean_tables):
    with sized_chrome(NARROW, live_server) as driver:
        yield driver


@pytest.fixture
def chinese_phone(live_server, clean_tables):
    with sized_chrome(NARROW, live_server, lang="zh-CN") as driver:
        yield driver


@contextmanager
def sized_chrome(size: tuple[int, int], live_server, lang: str = "en-US") -> Iterator[Any]:
    """tests/browser's Chromium with a window of `size` (a phone's screen emulated below
    Chromium's narrowest window)."""
    driver = chrome(size, lang=lang)
    try:
        driver.base_url = live_server.url
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(driver._profile_dir, ignore_errors=True)


def a_reader(username: str, *, role: str = Grant.READER) -> None:
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    Grant.objects.create(user=user, knowledge_base_id=kb_get("default").id, role=role)


def width_of(driver) -> int:
    width = driver.execute_script("return window.innerWidth;")
    assert width in (DESKTOP[0], NARROW[0])
    return width


def test_the_menu_folds_behind_a_button_on_a_phone_only(screen):
    # A researcher's menu, the longest but an admin's: with the lab, evaluation and traces.
    a_reader("ana", role=Grant.RESEARCHER)
    sign_in(screen, "ana")
    toggle = screen.find_element(*css(".topbar .nav-toggle"))
    links = screen.find_elements(*css(".topbar .nav a"))
    assert [link.get_attribute("href").split("/workbench/")[1] for link in links] == [
        "ask/", "conversations/", "lab/", "evaluation/", "knowledge/", "status/", "traces/"]
    assert screen.execute_script(PAGE_FITS)
    if width_of(screen) > 640:
        # One line: the brand, the menu, the account and the languages; no button.
        assert not toggle.is_displayed()
        assert all(link.is_displayed() for link in links)
        brand = screen.find_element(*css(".topbar .brand"))
        assert len({round(link.location["y"]) for link in links}) == 1
        assert abs(links[0].location["y"] - brand.location["y"]) <= 4
        assert screen.find_element(*css(".topbar")).size["height"] < 60
        return
    # Folded: the brand and the button; the header is one short line.
    assert toggle.is_displayed() and toggle.text == "Menu"
    assert toggle.get_attribute("aria-expanded") == "false"
    assert not any(link.is_displayed() for link in links)
    assert not screen.find_element(*css(".language-switch")).is_displayed()
    assert screen.find_element(*css(".topbar")).size["height"] < 60
    assert not screen.execute_script(PAST_THE_RIGHT, toggle)
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert all(link.is_displayed() for link in links)
    # One link a line, every one on the screen, the languages and sign-out too.
    assert len({round(link.location["y"]) for link in links}) == len(links)
    for element in [*links, screen.find_element(*css(".signout button")),
                    *screen.find_elements(*css(".language-switch button"))]:
        assert element.is_displayed() and not screen.execute_script(PAST_THE_RIGHT, element)
    assert screen.execute_script(PAGE_FITS)
    links[2].click()
    wait(screen, lambda driver: driver.current_url.endswith("/workbench/lab/"))
    assert not screen.find_element(*css(".topbar .nav a")).is_displayed()  # folded again


def test_the_404_and_403_pages_wear_the_workbench_look(screen):
    a_reader("ana")
    sign_in(screen, "ana")
    for path, heading in (("/workbench/no-such-page/", "Page not found"),
                          ("/workbench/traces/", "Not allowed")):
        screen.get(f"{screen.base_url}{path}")
        assert screen.find_element(*css("h1")).text == heading
        # The workbench's stylesheet applies: its dark top bar, its card.
        topbar = screen.find_element(*css("header.topbar"))
        assert topbar.value_of_css_property("background-color") == "rgba(23, 33, 47, 1)"
        card = screen.find_element(*css("section.card.http-error"))
        assert card.value_of_css_property("border-top-left-radius") == "8px"
        assert screen.find_element(*css(".http-error a")).get_attribute(
            "href").endswith("/workbench/")
        assert screen.execute_script(PAGE_FITS)
        assert not screen.execute_script(PAST_THE_RIGHT, card)


def test_the_404_page_follows_the_browsers_language(chinese_phone):
    a_reader("ana")
    sign_in(chinese_phone, "ana")
    chinese_phone.get(f"{chinese_phone.base_url}/workbench/no-such-page/")
    assert chinese_phone.find_element(*css("h1")).text == "页面没有找到"
    assert chinese_phone.find_element(*css(".topbar .nav-toggle")).text == "菜单"
    assert chinese_phone.execute_script(PAGE_FITS)


def test_the_labs_paths_wrap_after_separators_and_rerank_off_has_no_column(screen, tmp_path):
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select

    note = tmp_path / DEEP_PATH
    note.parent.mkdir(parents=True)
    note.write_text("# Weekend on-call\n\nThe weekend on-call rotation escalates a paging "
                    "alert to the platform lead after fifteen minutes without an "
                    "acknowledgement.\n", encoding="utf-8")
    ingest(tmp_path)
    a_reader("ana", role=Grant.RESEARCHER)
    sign_in(screen, "ana")
    screen.get(f"{screen.base_url}/workbench/lab/")
    screen.find_element(*css("#lab-form textarea[name=query]")).send_keys(
        "weekend on-call rotation escalates a paging alert")
    Select(screen.find_element(*css("#lab-form select[name=mode]"))).select_by_value("hybrid")
    Select(screen.find_element(*css("#lab-form select[name=rerank]"))).select_by_value("none")
    screen.find_element(*css("#lab-form button[type=submit]")).click()
    wait(screen, EC.presence_of_element_located(css("#lab-results .lab-stage")))
    stages = screen.find_elements(*css("#lab-results .lab-stage"))
    assert [stage.get_attribute("data-stage") for stage in stages] == [
        "vector", "lexical", "fused"]
    assert "the rerank provider is none" in screen.find_element(
        *css("#lab-results .lab-rerank-off")).text
    width = width_of(screen)
    if width > 1000:  # side by side, sharing the width the four columns had
        assert len({round(stage.location["y"]) for stage in stages}) == 1
        assert stages[-1].location["x"] + stages[-1].size["width"] > 0.9 * width - 40
    titles = [title for title in screen.find_elements(*css("#lab-results .card-title"))
              if title.text.replace("\n", "") == DEEP_PATH]
    assert titles
    for title in titles:
        assert not screen.execute_script(PAST_THE_RIGHT, title)
        pieces = screen.execute_script(PIECE_LINES, title)
        assert "".join(text for text, _ in pieces) == DEEP_PATH
        # Each piece ends at a separator and lies on one line: any break is after a "/".
        assert all(text.endswith("/") for text, _ in pieces[:-1])
        assert all(len(tops) == 1 for _, tops in pieces), pieces
        if width <= 640:
            assert len({tops[0] for _, tops in pieces}) > 1  # it did wrap
    assert screen.execute_script(PAGE_FITS)


def test_the_count_beside_a_thread_follows_its_answers(phone):
    from selenium.webdriver.support import expected_conditions as EC

    ingest(ROOT / "samples" / "acme-vault")
    a_reader("ana")
    sign_in(phone, "ana")
    phone.find_element(*css(".conversation-aside button[type=submit]")).click()
    wait(phone, EC.presence_of_element_located(css("#conversation-form")))
    current = phone.find_element(*css('#conversation-list a[aria-current="page"]'))
    assert "0 messages" in current.find_element("xpath", "..").text
    phone.execute_script("window.__samePage = true;")
    phone.find_element(*css("#conversation-form textarea[name=question]")).send_keys(
        "客户 P1 工单应该怎么升级？")
    phone.find_element(*css("#conversation-submit")).click()
    wait(phone, lambda driver: "2 messages" in driver.find_element(
        *css('#conversation-list a[aria-current="page"]')).find_element("xpath", "..").text)
    item = phone.find_element(*css('#conversation-list a[aria-current="page"]'))
    assert item.text == "客户 P1 工单应该怎么升级？"  # and titled by its question
    assert phone.execute_script("return window.__samePage === true;")  # no reload
    assert phone.execute_script(PAGE_FITS)
