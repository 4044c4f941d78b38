"""Sign in, ask, watch the answer stream in, read the source cards, open a source; and a note
carrying script payloads that never runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.answering.stub_openai import StubOpenAI
from tests.browser.conftest import css, ingest, sign_in, wait
from tests.harness import ROOT
from workbench.models import Feedback

QUESTION = "How long does a P1 incident have before it is escalated?"
UNKNOWN = "What is the airspeed velocity of an unladen swallow?"

PAYLOAD_NOTE = ("# Zanzibar gateway\n"
                "\n"
                'The zanzibar gateway code is ZX-9000 <script>window.__pwned = "script"</script> '
                "<img src=x onerror=\"window.__pwned = 'img'\"> "
                "[open me](javascript:window.__pwned='link') "
                "and <a href=\"javascript:window.__pwned='a'\">this</a> too.\n"
                "\n"
                "More about the **zanzibar gateway**: it opens at `09:00`.\n")


@pytest.fixture
def sample_vault(clean_tables):
    ingest(ROOT / "samples" / "acme-vault")


def test_sign_in_ask_and_see_the_answer_stream_in(browser, account, sample_vault,
                                                  config_override):
    from selenium.webdriver.support import expected_conditions as EC

    account("ana", grants={"default": "reader"})
    with StubOpenAI(behaviour="sse_hang", hang_seconds=1.0,
                    deltas=["Escalate ", "within fifteen minutes ", "after paging [1]."]) as stub:
        config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                        llm_model="stub-model", llm_api_key="k")
        sign_in(browser, "ana")
        browser.execute_script("window.__samePage = true;")
        browser.find_element(*css("#id_question")).send_keys(QUESTION)
        browser.find_element(*css("#ask-submit")).click()
        # Part of the answer is on the page while the model is still writing the rest.
        streaming = wait(browser, EC.presence_of_element_located(
            css('#answer article[data-look="streaming"]')))
        wait(browser, lambda driver: "Escalate" in streaming.text)
        assert "after paging" not in streaming.text
        answer = wait(browser, EC.presence_of_element_located(
            css('#answer article[data-look="answer"]')))
    assert "Escalate within fifteen minutes after paging" in answer.text
    # Streamed into this page by its script, not a form post and a new page.
    assert browser.execute_script("return window.__samePage === true;")
    cards = browser.find_elements(*css("#answer .source-card"))
    assert cards, "no source cards"
    first = cards[0]
    assert first.get_attribute("id") == "source-1"
    assert first.find_element(*css(".card-title")).text
    assert first.find_element(*css(".excerpt")).text
    # The [1] marker links to its card.
    marker = browser.find_element(*css("#answer a.cite"))
    assert marker.get_attribute("href").endswith("#source-1")
    # Thumbs down with an error type: stored, and the form says so.
    browser.find_element(*css("#answer select[name=error_type]")).send_keys("a citation")
    trace_id = browser.find_element(*css("#answer article")).get_attribute("data-trace-id")
    browser.find_element(*css('#answer button[value="down"]')).click()
    done = wait(browser, EC.presence_of_element_located(css("#answer .feedback-done")))
    assert "not helpful" in done.text
    feedback = Feedback.objects.get(trace_id=trace_id)
    assert (feedback.rating, feedback.error_type) == (Feedback.DOWN, "wrong_citation")
    # Open the first source: the cited chunk is highlighted in its document.
    title = first.find_element(*css("a.card-title"))
    title.click()
    wait(browser, EC.url_contains("/workbench/chunks/"))
    current = wait(browser, EC.presence_of_element_located(css(".chunk.current")))
    assert current.text.strip()


def test_the_three_looks_differ(browser, account, sample_vault, config_override):
    from selenium.webdriver.support import expected_conditions as EC

    account("ana", grants={"default": "reader"})
    sign_in(browser, "ana")

    def ask(question: str) -> tuple[str, str, str]:
        previous = browser.find_elements(*css("#answer article"))
        box = browser.find_element(*css("#id_question"))
        box.clear()
        box.send_keys(question)
        browser.find_element(*css("#ask-submit")).click()
        if previous:
            wait(browser, EC.staleness_of(previous[0]))
        article = wait(browser, EC.presence_of_element_located(
            css('#answer article.answer:not([data-look="streaming"])')))
        colour = browser.execute_script(
            "return getComputedStyle(arguments[0]).borderLeftColor;", article)
        badge = article.find_element(*css(".badge")).text
        return article.get_attribute("data-look"), colour, badge

    answered, refused = ask(QUESTION), ask(UNKNOWN)
    config_override(llm_provider="openai-compatible", llm_base_url="", llm_model="",
                    llm_api_key="")
    failed = ask(QUESTION)
    assert [answered[0], refused[0], failed[0]] == ["answer", "no-answer", "error"]
    assert len({answered[1], refused[1], failed[1]}) == 3, "the looks share a colour"
    assert (answered[2], refused[2], failed[2]) == (
        "Answer", "The knowledge base does not know", "Error")


def test_a_note_with_script_payloads_never_runs(browser, account, tmp_path: Path,
                                                clean_tables):
    from selenium.webdriver.support import expected_conditions as EC

    vault = tmp_path / "payload-vault"
    vault.mkdir()
    (vault / "zanzibar.md").write_text(PAYLOAD_NOTE, encoding="utf-8")
    ingest(vault)
    account("ana", grants={"default": "reader"})
    sign_in(browser, "ana")
    browser.find_element(*css("#id_question")).send_keys("What is the zanzibar gateway code?")
    browser.find_element(*css("#ask-submit")).click()
    answer = wait(browser, EC.presence_of_element_located(
        css('#answer article[data-look="answer"]')))
    # The payload is on the page as text ...
    assert "<script>" in answer.text and "onerror=" in answer.text
    assert "javascript:" in answer.text
    # ... and nothing of it became markup or ran.
    _no_payload_ran(browser, "#answer")
    # The source card shows the note's Markdown as the reader sees it, not its markers.
    excerpt = answer.find_element(*css(".source-card .excerpt"))
    assert "**" not in excerpt.text and "`" not in excerpt.text
    # (its heading a bold line of the card, not a heading of the page)
    assert [bold.text for bold in excerpt.find_elements(*css("strong"))] == [
        "Zanzibar gateway", "zanzibar gateway"]
    assert not excerpt.find_elements(*css("h1, h2, h3"))
    assert excerpt.find_element(*css("code")).text == "09:00"
    browser.find_element(*css("#answer a.card-title")).click()
    wait(browser, EC.presence_of_element_located(css(".chunk.current")))
    assert "<script>" in browser.find_element(*css(".chunk.current")).text
    _no_payload_ran(browser, "main")


def _no_payload_ran(browser, scope: str) -> None:
    assert browser.execute_script("return window.__pwned === undefined;")
    assert not browser.find_elements(*css(f"{scope} script"))
    assert not browser.find_elements(*css(f"{scope} img[src=x]"))
    links = browser.find_elements(*css(f"{scope} a"))
    assert all(not (link.get_attribute("href") or "").lower().startswith("javascript:")
               for link in links)
    for link in links:  # clicking any link of the answer runs nothing either
        if "javascript" in (link.text or "").lower():
            link.click()
    assert browser.execute_script("return window.__pwned === undefined;")


def test_quotes_show_on_their_cards_and_in_the_source_unverified_ones_say_so(
        browser, account, sample_vault, config_override):
    from selenium.webdriver.support import expected_conditions as EC

    account("ana", grants={"default": "reader"})
    quoted = "客户提交的 P1 工单按以下时间线升级。"  # the first sentence of block 1
    with StubOpenAI(behaviour="sse", deltas=[f"{quoted} [1] ",
                                             "Swallows fly at eleven metres per second. [2]"]
                    ) as stub:
        config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                        llm_model="stub-model", llm_api_key="k")
        sign_in(browser, "ana")
        browser.find_element(*css("#id_question")).send_keys(QUESTION)
        browser.find_element(*css("#ask-submit")).click()
        answer = wait(browser, EC.presence_of_element_located(
            css('#answer article[data-look="answer"]')))
    first, second = answer.find_elements(*css(".source-card"))[:2]
    assert first.find_element(*css(".card-quote")).text == f"Quoted: “{quoted}”"
    assert not first.find_elements(*css(".badge-unverified"))
    badge = second.find_element(*css(".badge-unverified"))
    assert badge.is_displayed() and badge.text.startswith("Unverified")
    # The rest of its label is for screen readers: there, but taking no room.
    label = badge.find_element(*css(".visually-hidden"))
    assert "no sentence of this source supports" in label.get_attribute("textContent")
    assert browser.execute_script("return arguments[0].getBoundingClientRect().width;",
                                  label) <= 1
    assert answer.find_element(*css(".unsupported-count")).text == (
        "1 citation could not be verified in its source")
    first.find_element(*css("a.card-title")).click()
    mark = wait(browser, EC.presence_of_element_located(css(".chunk.current mark.quote")))
    assert mark.text == quoted
    # Scrolled to, and styled by the site's stylesheet alone: the policy refused nothing.
    assert browser.execute_script(
        "const box = arguments[0].getBoundingClientRect();"
        "return box.top >= 0 && box.bottom <= window.innerHeight;", mark)
    assert browser.execute_script(
        "return getComputedStyle(arguments[0]).backgroundColor;", mark) != "rgba(0, 0, 0, 0)"
    violations = [entry for entry in browser.get_log("browser")
                  if "Content Security Policy" in entry["message"]]
    assert violations == []
