"""Tables and charts readable at 1280 and 390 px: the evaluation history fits the desktop
without scrolling sideways and becomes one card per run on a phone, each metric has a chart of
its own, a knowledge base's document table keeps Status and Actions on a phone's screen, and the
filter fields of the lab and a new conversation open within the window."""

from __future__ import annotations

import shutil

import pytest

from evaluation.models import EvalRun, QuestionSet
from knowledge.bases import kb_get
from tests.browser.conftest import DESKTOP, NARROW, chrome, css, ingest, sign_in
from tests.harness import ROOT

SUMMARY = {"hit_at_1": 0.95, "hit_at_5": 1.0, "mrr": 0.975, "ndcg_at_10": 0.978,
           "no_answer_precision": 1.0, "no_answer_recall": 1.0, "mode_accuracy": 1.0,
           "latency_p50_ms": 17.4, "latency_p95_ms": 28.6, "passed": 26, "questions": 26}
# Whether any part of an element lies right of the window (it would need sideways scrolling).
PAST_THE_RIGHT = "return arguments[0].getBoundingClientRect().right > window.innerWidth + 0.5;"
PAGE_FITS = "return document.documentElement.scrollWidth <= window.innerWidth;"


@pytest.fixture(params=[DESKTOP, NARROW], ids=["1280px", "390px"])
def sized(request, live_server, clean_tables):
    driver = chrome(request.param)
    driver.base_url = live_server.url
    yield driver
    driver.quit()
    shutil.rmtree(driver._profile_dir, ignore_errors=True)


def runs_of_a_set() -> QuestionSet:
    question_set = QuestionSet.objects.create(
        name="acme questions", knowledge_base_id=kb_get("default").id, source_name="questions.yaml",
        questions=[{"id": "q1", "question": "?"}])
    for retrieval in ("vector", "hybrid"):
        EvalRun.objects.create(question_set=question_set,
                               knowledge_base_id=question_set.knowledge_base_id,
                               status=EvalRun.DONE, summary=SUMMARY, report={"questions": []},
                               parameters={"top_k": 5, "retrieval": retrieval})
    return question_set


def test_the_evaluation_history_and_its_charts_fit_the_screen(sized, account):
    question_set = runs_of_a_set()
    account("ana", grants={"default": "researcher"})
    sign_in(sized, "ana")
    sized.get(f"{sized.base_url}/workbench/evaluation/?set={question_set.pk}")
    width = sized.execute_script("return window.innerWidth;")
    assert sized.execute_script(PAGE_FITS)
    rows = sized.find_elements(*css("table.eval-history tbody tr"))
    assert len(rows) == 2
    latency = [cell for row in rows
               for cell in row.find_elements(*css("td.num"))
               if cell.get_attribute("data-label") == "Latency p95 (ms)"]
    assert [cell.text.split()[-1] for cell in latency] == ["28.6", "28.6"]
    # Every cell of every run is on the screen, the latency columns included.
    cells = [cell for row in rows for cell in row.find_elements(*css("td"))]
    assert not [cell.text for cell in cells if sized.execute_script(PAST_THE_RIGHT, cell)]
    wrap = sized.find_element(*css("table.eval-history")).find_element(
        "xpath", "ancestor::div[contains(@class, 'table-wrap')]")
    assert sized.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth;",
                                wrap)
    if width <= 640:
        # A card per run: its cells stacked, each with its column's name.
        assert rows[0].value_of_css_property("display") == "block"
        label = sized.execute_script(
            "return getComputedStyle(arguments[0], '::before').content;", latency[0])
        assert label == '"Latency p95 (ms)"'
        assert sized.find_element(*css("table.eval-history thead")).size["height"] <= 1
    else:
        assert rows[0].value_of_css_property("display") == "table-row"
    # One chart per metric, side by side or stacked, none on top of another.
    charts = sized.find_elements(*css(".eval-chart"))
    assert len(charts) == 9
    boxes = [sized.execute_script("const r = arguments[0].getBoundingClientRect();"
                                  "return [r.left, r.top, r.right, r.bottom];", chart)
             for chart in charts]
    for index, (left, top, right, bottom) in enumerate(boxes):
        assert right <= width and right - left >= 200
        for other in boxes[index + 1:]:
            assert (right <= other[0] or other[2] <= left or bottom <= other[1]
                    or other[3] <= top), "two charts overlap"
    captions = [chart.find_element(*css("figcaption")).text for chart in charts]
    assert captions[0].startswith("Hit@1 0.950")
    assert captions[-1].startswith("Latency p95 (ms) 28.6")


def test_a_bases_document_table_keeps_status_and_actions_on_screen(sized, account):
    ingest(ROOT / "samples" / "acme-vault")
    account("mo", grants={"default": "maintainer"})
    sign_in(sized, "mo")
    sized.get(f"{sized.base_url}/workbench/knowledge/default/")
    assert sized.execute_script(PAGE_FITS)
    rows = sized.find_elements(*css("table.documents tbody tr"))
    assert len(rows) >= 5
    for row in rows:
        status = row.find_element(*css('td[data-label="Status"]'))
        actions = row.find_element(*css("td.actions"))
        assert "active" in status.text
        reindex = actions.find_element(*css("button"))
        assert reindex.is_displayed() and reindex.text == "Reindex"
        for cell in (status, actions, reindex):
            assert not sized.execute_script(PAST_THE_RIGHT, cell)


@pytest.mark.parametrize("path", ["/workbench/lab/", "/workbench/conversations/"])
def test_the_filter_fields_of_the_lab_and_a_new_conversation_open_on_screen(sized, account,
                                                                           path):
    account("rita", grants={"default": "researcher"})
    sign_in(sized, "rita")
    sized.get(f"{sized.base_url}{path}")
    filters = sized.find_element(*css("details.filters"))
    filters.find_element(*css("summary")).click()
    fields = [filters.find_element(*css(f'[name="{name}"]'))
              for name in ("folder", "format", "tags", "conditions")]
    assert sized.execute_script(PAGE_FITS)
    for field in fields:
        assert field.is_displayed() and not sized.execute_script(PAST_THE_RIGHT, field)
