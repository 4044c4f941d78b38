"""The retrieval lab in a real browser: parameters in, four stage columns out, without leaving
the page."""

from __future__ import annotations

from tests.browser.conftest import css, ingest, sign_in, wait
from tests.harness import ROOT


def test_the_lab_shows_every_stage_side_by_side(browser, account, clean_tables):
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select

    ingest(ROOT / "samples" / "acme-vault")
    account("ana", grants={"default": "researcher"})
    sign_in(browser, "ana")
    browser.get(f"{browser.base_url}/workbench/lab/")
    browser.execute_script("window.__samePage = true;")
    browser.find_element(*css("#lab-form textarea, #lab-form input[name=query]")).send_keys(
        "P1 incident escalation")
    Select(browser.find_element(*css("#lab-form select[name=mode]"))).select_by_value("hybrid")
    Select(browser.find_element(*css("#lab-form select[name=rerank]"))).select_by_value(
        "features")
    candidates = browser.find_element(*css("#lab-form input[name=candidates]"))
    candidates.clear()
    candidates.send_keys("30")
    browser.find_element(*css("#lab-form button[type=submit]")).click()
    wait(browser, EC.presence_of_element_located(css("#lab-results .lab-stage")))
    stages = browser.find_elements(*css("#lab-results .lab-stage"))
    assert [stage.get_attribute("data-stage") for stage in stages] == [
        "vector", "lexical", "fused", "rerank"]
    assert all(stage.get_attribute("data-ran") == "true" for stage in stages)
    for stage in stages:
        ranks = [int(entry.get_attribute("data-rank"))
                 for entry in stage.find_elements(*css(".lab-entry"))]
        assert ranks and ranks == sorted(ranks)
    assert browser.find_element(*css('[data-parameter="candidates"]')).text == "30"
    assert browser.find_elements(*css("#lab-results [data-stage-ms]"))
    assert browser.execute_script("return window.__samePage === true;")  # htmx, no reload
