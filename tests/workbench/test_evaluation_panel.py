"""The evaluation panel: question sets imported from YAML, runs as `eval_run` jobs run by a real
worker in this process, history, comparison, the SVG chart, and access by grants."""

from __future__ import annotations

import re
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from access.callers import Scope
from access.models import Grant
from core.config import get_config
from evaluation.models import EvalRun, QuestionSet
from evaluation.questions import evaluate, questions_load
from jobs.queue import job_cancel, job_get
from jobs.worker import Worker
from knowledge.bases import kb_create, kb_get
from tests.harness import ROOT

QUESTIONS = ROOT / "eval" / "questions.yaml"
PANEL = "/workbench/evaluation/"
METRIC_KEYS = ("hit_at_1", "hit_at_5", "mrr", "ndcg_at_10", "no_answer_precision",
               "no_answer_recall", "mode_accuracy", "passed", "questions", "failed")


def import_set(client, *, name: str = "demo", slug: str = "default", text: str | None = None):
    data = {"name": name, "knowledge_base": slug}
    if text is None:
        data["file"] = SimpleUploadedFile("questions.yaml", QUESTIONS.read_bytes())
    else:
        data["text"] = text
    return client.post(f"{PANEL}sets/import", data)


def launch(client, question_set: QuestionSet, **fields):
    return client.post(f"{PANEL}runs/launch", {"question_set": question_set.pk, **fields})


def work() -> None:
    """Run every due job on this thread (inside the test's transaction), as `rag worker`."""
    worker = Worker(poll_seconds=0.01)
    while worker.run_once():
        pass


def done_run(question_set: QuestionSet, *, summary: dict, questions: list[dict]) -> EvalRun:
    """A finished run with hand-made scores, for the history, comparison and chart."""
    return EvalRun.objects.create(
        question_set=question_set, knowledge_base_id=question_set.knowledge_base_id,
        status=EvalRun.DONE, parameters={"top_k": 5, "retrieval": "hybrid"}, summary=summary,
        report={"questions": questions})


def row(question_id: str, *, rank: int | None, passed: bool) -> dict:
    return {"id": question_id, "question": f"question {question_id}?", "hit_rank": rank,
            "passed": passed, "expected_mode": "rag", "mode": "rag", "confidence": 0.5}


# ---- importing question sets ------------------------------------------------------------------

def test_a_valid_yaml_file_is_stored_as_a_set_with_its_questions(researcher):
    response = import_set(researcher)
    question_set = QuestionSet.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"{PANEL}?set={question_set.pk}"
    expected = questions_load(path=QUESTIONS)
    assert len(question_set.questions) == len(expected) >= 12
    assert question_set.questions[0]["id"] == expected[0].id
    assert (question_set.name, question_set.source_name) == ("demo", "questions.yaml")
    assert question_set.knowledge_base_id == kb_get("default").id
    assert question_set.created_by_id == researcher.user.pk
    page = researcher.get(PANEL).content.decode()
    assert f'href="/workbench/evaluation/sets/{question_set.pk}/"' in page
    detail = researcher.get(f"{PANEL}sets/{question_set.pk}/").content.decode()
    assert expected[0].question in detail


def test_pasted_yaml_is_imported_too(researcher):
    response = import_set(researcher, text=QUESTIONS.read_text(encoding="utf-8"))
    assert response.status_code == 302
    assert QuestionSet.objects.get().source_name == ""


def test_invalid_yaml_is_shown_and_nothing_is_stored(researcher):
    response = import_set(researcher, text="questions: [\n")
    html = response.content.decode()
    assert response.status_code == 422
    assert "Nothing was imported" in html and "is not valid YAML" in html
    assert not QuestionSet.objects.exists()


def test_each_invalid_question_is_named_and_nothing_is_stored(researcher):
    text = ("questions:\n"
            "  - id: good\n    question: fine\n    expected_sources: [a.md]\n"
            "    expected_mode: rag\n"
            "  - id: q2\n    question: no mode here\n"
            "  - id: q3\n    question: odd mode\n    expected_mode: perhaps\n")
    response = import_set(researcher, text=text)
    html = response.content.decode()
    assert response.status_code == 422
    errors = re.findall(r"<li>(.*?)</li>", html.split("Nothing was imported")[1])
    assert errors == ["question q2 (#2) lacks a field: &#x27;expected_mode&#x27;",
                      "question q3 (#3): expected_mode must be rag or no_answer"]
    assert not QuestionSet.objects.exists()


def test_repeated_question_ids_and_a_taken_name_are_refused(researcher):
    twice = ("questions:\n" + "  - id: same\n    question: x\n    expected_mode: no_answer\n" * 2)
    html = import_set(researcher, text=twice).content.decode()
    assert "question ids must be unique; repeated: same" in html
    assert import_set(researcher).status_code == 302
    taken = import_set(researcher)
    assert taken.status_code == 422 and "already has a question set named" in taken.content.decode()
    assert QuestionSet.objects.count() == 1


def test_a_file_and_pasted_text_together_are_refused(researcher):
    response = researcher.post(f"{PANEL}sets/import", {
        "name": "both", "knowledge_base": "default", "text": "questions: []",
        "file": SimpleUploadedFile("q.yaml", QUESTIONS.read_bytes())})
    assert response.status_code == 422 and "not both" in response.content.decode()
    assert not QuestionSet.objects.exists()


def test_the_shipped_questions_are_offered_and_imported_without_an_upload(researcher):
    panel = researcher.get(PANEL).content.decode()
    assert '<input type="checkbox" name="shipped" id="id_shipped">' in panel
    assert "<code>eval/questions.yaml</code>" in panel
    response = researcher.post(f"{PANEL}sets/import", {"name": "", "knowledge_base": "default",
                                                   "shipped": "on"})
    question_set = QuestionSet.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"{PANEL}?set={question_set.pk}"
    assert (question_set.name, question_set.source_name) == ("eval/questions.yaml",
                                                             "eval/questions.yaml")
    expected = questions_load(path=QUESTIONS)
    assert [question["id"] for question in question_set.questions] == [
        question.id for question in expected]
    # Ready to run: the set is in the launch form.
    launch_form = researcher.get(PANEL).content.decode().split('id="launch-title"')[1]
    assert f'<option value="{question_set.pk}"' in launch_form


def test_the_shipped_questions_and_a_name_of_ones_own(researcher):
    researcher.post(f"{PANEL}sets/import", {"name": "acme baseline", "knowledge_base": "default",
                                        "shipped": "on"})
    assert QuestionSet.objects.get().name == "acme baseline"


def test_the_shipped_questions_with_pasted_ones_are_refused(researcher):
    response = researcher.post(f"{PANEL}sets/import", {"name": "", "knowledge_base": "default",
                                                   "shipped": "on", "text": "questions: []"})
    assert response.status_code == 422 and "not both" in response.content.decode()
    assert not QuestionSet.objects.exists()


def test_without_a_shipped_file_nothing_is_offered(researcher, config_override, tmp_path):
    config_override(project_root=tmp_path)
    assert 'name="shipped"' not in researcher.get(PANEL).content.decode()
    response = researcher.post(f"{PANEL}sets/import", {"name": "x", "knowledge_base": "default",
                                                   "shipped": "on"})
    assert response.status_code == 422
    assert "Upload a YAML file or paste the questions." in response.content.decode()


def test_a_set_of_ones_own_still_needs_a_name(researcher):
    response = import_set(researcher, name="")
    assert response.status_code == 422 and "This field is required." in response.content.decode()
    assert not QuestionSet.objects.exists()


# ---- runs -------------------------------------------------------------------------------------

def test_a_run_scores_exactly_what_evaluate_gives(researcher, sample_index):
    import_set(researcher)
    question_set = QuestionSet.objects.get()
    response = launch(researcher, question_set, top_k=5)
    run = EvalRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{PANEL}runs/{run.pk}/"
    assert (run.status, run.parameters) == ("queued", {"top_k": 5,
                                                       "retrieval": get_config().rag_retrieval})
    assert job_get(run.job_id).type == "eval_run"
    started = time.perf_counter()
    work()
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    print(f"\neval_run of {len(question_set.questions)} questions: {seconds:.2f} s, "
          f"p50 {run.summary['latency_p50_ms']} ms, p95 {run.summary['latency_p95_ms']} ms")
    assert run.status == "done" and run.error == "" and run.finished_at is not None
    expected = evaluate(questions=questions_load(path=QUESTIONS), top_k=5, config=get_config(),
                        scope=Scope.of([kb_get("default").id]))["summary"]
    assert {key: run.summary[key] for key in METRIC_KEYS} == {
        key: expected[key] for key in METRIC_KEYS}
    assert 0 < run.summary["latency_p50_ms"] <= run.summary["latency_p95_ms"]
    assert len(run.report["questions"]) == len(question_set.questions)
    assert run.parameters["embedding"] == "fake/fake-lexical-v1"
    page = researcher.get(f"{PANEL}runs/{run.pk}/").content.decode()
    assert 'data-status="done"' in page and "hx-trigger" not in page
    assert f"{run.summary['hit_at_1']:.3f}" in page and "nDCG@10" in page
    assert page.count('<tr id="question-') == len(question_set.questions)


def test_a_run_follows_its_job_while_queued_and_stops_polling_when_done(researcher, sample_index):
    import_set(researcher)
    launch(researcher, QuestionSet.objects.get(), retrieval="lexical")
    run = EvalRun.objects.get()
    row_url, status_url = f"{PANEL}runs/{run.pk}/row", f"{PANEL}runs/{run.pk}/status"
    queued = researcher.get(row_url).content.decode()
    assert 'hx-trigger="every 2s"' in queued and f'hx-get="{row_url}"' in queued
    assert '<progress value="0.000" max="1"></progress>' in queued
    assert "waiting for a worker" in queued
    panel = researcher.get(PANEL).content.decode()
    assert f'<tr id="run-{run.pk}" data-status="queued" hx-get="{row_url}"' in panel
    assert 'hx-trigger="every 2s"' in researcher.get(status_url).content.decode()
    work()
    done = researcher.get(row_url).content.decode()
    assert 'data-status="done"' in done and "hx-trigger" not in done
    assert f'name="run" value="{run.pk}"' in done  # selectable for comparison now
    polled = researcher.get(status_url, HTTP_HX_REQUEST="true")
    assert polled["HX-Refresh"] == "true"  # the page reloads to show the scores
    run.refresh_from_db()
    assert run.parameters["retrieval"] == run.report["retrieval"] == "lexical"


def test_a_run_searches_only_its_own_base_and_its_failure_is_shown(person, sample_index):
    kb_create(slug="empty", name="Empty base")
    client = person("both", grants={"default": Grant.RESEARCHER, "empty": Grant.RESEARCHER})
    import_set(client, slug="empty")
    launch(client, QuestionSet.objects.get(), top_k=5)
    work()
    run = EvalRun.objects.get()
    # `default` holds the sample vault, but the set's base has nothing indexed.
    assert run.status == "failed" and run.error.startswith("retrieval_not_ready")
    assert job_get(run.job_id).status == "failed"
    page = client.get(f"{PANEL}runs/{run.pk}/").content.decode()
    assert 'data-status="failed"' in page and "retrieval_not_ready" in page
    history = client.get(PANEL).content.decode()
    assert f'<tr id="run-{run.pk}" data-status="failed"' in history


def test_a_run_whose_job_is_cancelled_is_shown_failed(researcher, sample_index):
    import_set(researcher)
    launch(researcher, QuestionSet.objects.get())
    run = EvalRun.objects.get()
    job_cancel(run.job_id)
    page = researcher.get(f"{PANEL}runs/{run.pk}/").content.decode()
    run.refresh_from_db()
    assert run.status == "failed" and "the job was cancelled" in run.error
    assert 'data-status="failed"' in page and "hx-trigger" not in page


def test_a_run_fails_when_its_creator_lost_the_grant_before_it_ran(researcher, sample_index):
    import_set(researcher)
    launch(researcher, QuestionSet.objects.get())
    Grant.objects.filter(user=researcher.user).delete()
    work()
    run = EvalRun.objects.get()
    assert run.status == "failed" and "may no longer research" in run.error
    assert run.summary == {}


def test_top_k_out_of_range_is_refused_on_the_page(researcher):
    import_set(researcher)
    response = launch(researcher, QuestionSet.objects.get(), top_k=50)
    assert response.status_code == 422
    assert not EvalRun.objects.exists()


# ---- history, comparison, chart ---------------------------------------------------------------

@pytest.fixture
def demo_set(researcher) -> QuestionSet:
    import_set(researcher)
    return QuestionSet.objects.get()


def test_compare_shows_both_runs_each_metric_with_its_difference_and_changed_questions(
        researcher, demo_set):
    older = done_run(demo_set, summary={"hit_at_1": 0.5, "hit_at_5": 1.0, "mrr": 0.75,
                                        "latency_p50_ms": 10.0},
                     questions=[row("a", rank=1, passed=True), row("b", rank=2, passed=True),
                                row("c", rank=1, passed=True), row("d", rank=None, passed=False)])
    newer = done_run(demo_set, summary={"hit_at_1": 0.75, "hit_at_5": 0.75, "mrr": 0.75,
                                        "latency_p50_ms": 12.5},
                     questions=[row("a", rank=1, passed=True), row("b", rank=1, passed=True),
                                row("c", rank=None, passed=False), row("d", rank=None,
                                                                          passed=False)])
    response = researcher.get(f"{PANEL}compare/", {"run": [newer.pk, older.pk]})
    html = response.content.decode()
    assert response.status_code == 200
    assert f"#{older.pk}</a> → run" in html and f">#{newer.pk}</a></h1>" in html

    def metric(key: str) -> list[str]:
        block = re.search(rf'<tr data-metric="{key}">(.*?)</tr>', html, re.S).group(1)
        return re.findall(r"<td[^>]*>(.*?)</td>", block)[1:]

    assert metric("hit_at_1") == ["0.500", "0.750", "+0.250"]
    assert metric("hit_at_5") == ["1.000", "0.750", "-0.250"]
    assert metric("mrr") == ["0.750", "0.750", "0.000"]
    assert metric("latency_p50_ms") == ["10.0", "12.5", "+2.5"]
    assert metric("ndcg_at_10") == ["–", "–", "–"]
    assert ('class="num eval-delta-better">+0.250' in html
            and 'class="num eval-delta-worse">+2.5' in html)
    changed = re.findall(r'<tr data-question="(\w+)">.*?<td>([^<]*)</td>\s*</tr>', html, re.S)
    assert changed == [("b", "hit rank 2 → 1"), ("c", "now fails; hit rank 1 → none")]
    assert "2 questions changed, 2 unchanged" in html


def test_compare_needs_two_different_runs(researcher, demo_set):
    run = done_run(demo_set, summary={}, questions=[])
    assert researcher.get(f"{PANEL}compare/", {"run": [run.pk]}).status_code == 400
    assert researcher.get(f"{PANEL}compare/", {"run": [run.pk, run.pk]}).status_code == 400


def test_history_lists_runs_newest_first_with_their_metrics(researcher, demo_set):
    first = done_run(demo_set, summary={"hit_at_1": 0.25}, questions=[])
    second = done_run(demo_set, summary={"hit_at_1": 0.5}, questions=[])
    html = researcher.get(PANEL).content.decode()
    assert html.index(f'id="run-{second.pk}"') < html.index(f'id="run-{first.pk}"')
    assert ">0.500</td>" in html and ">0.250</td>" in html


def chart_of(html: str, metric: str) -> str:
    return re.search(rf'<figure class="eval-chart">(?:(?!</figure>).)*data-chart="{metric}"'
                     r'.*?</figure>', html, re.S).group(0)


def test_each_metric_has_its_own_chart_with_one_point_per_finished_run(researcher, demo_set):
    runs = [done_run(demo_set, summary={"hit_at_1": value, "mrr": value, "latency_p50_ms": 5.0,
                                        "latency_p95_ms": 9.0}, questions=[])
            for value in (0.25, 0.5, 1.0)]
    EvalRun.objects.create(question_set=demo_set, knowledge_base_id=demo_set.knowledge_base_id,
                           status=EvalRun.FAILED, error="boom", parameters={"top_k": 5})
    html = researcher.get(PANEL, {"set": demo_set.pk}).content.decode()
    # A chart per metric the runs have, none for those they lack (refusal, nDCG...).
    assert re.findall(r'data-chart="(\w+)"', html) == [
        "hit_at_1", "mrr", "latency_p50_ms", "latency_p95_ms"]
    hit = chart_of(html, "hit_at_1")
    assert hit.count('class="chart-line"') == 1
    points = re.findall(r'<circle class="chart-point" data-run="(\d+)" cx="([\d.]+)" '
                        r'cy="([\d.]+)"', hit)
    assert [int(run_id) for run_id, _, _ in points] == [run.pk for run in runs]  # oldest first
    heights = [float(cy) for _, _, cy in points]
    assert heights[0] > heights[1] > heights[2]  # higher value, higher on the chart
    assert heights[2] == 10.0  # 1.0 is the top of the 0–1 axis
    assert len(re.findall(r"<title>run #\d+ · [^<]* · Hit@1 [\d.]+</title>", hit)) == 3
    assert re.search(r'<polyline points="[\d.,]+ [\d.,]+ [\d.,]+"', hit)
    # Its caption names the metric and the newest run's value.
    assert re.search(rf'<strong>Hit@1</strong> <span class="eval-chart-latest">1.000</span> '
                     rf'<span class="muted">run #{runs[-1].pk}</span>', hit)
    assert ">1</text>" in hit and ">0</text>" in hit
    assert "10 ms</text>" in chart_of(html, "latency_p95_ms")
    charts = re.findall(r'<figure class="eval-chart">.*?</figure>', html, re.S)
    assert charts and not [chart for chart in charts if "<script" in chart]
    assert "style=" not in html


def test_a_single_run_draws_every_metric_apart(researcher, demo_set):
    run = done_run(demo_set, summary={"hit_at_1": 1.0, "hit_at_5": 1.0, "mrr": 1.0,
                                      "ndcg_at_10": 1.0, "no_answer_precision": 1.0,
                                      "no_answer_recall": 1.0, "mode_accuracy": 1.0,
                                      "latency_p50_ms": 4.0, "latency_p95_ms": 8.5}, questions=[])
    html = researcher.get(PANEL, {"set": demo_set.pk}).content.decode()
    charts = re.findall(r'<figure class="eval-chart">.*?</figure>', html, re.S)
    assert len(charts) == 9
    for chart in charts:
        # One line, one point at the run, and the value in words beside the chart.
        assert chart.count('class="chart-line"') == 1
        assert re.findall(r'class="chart-point" data-run="(\d+)"', chart) == [str(run.pk)]
        assert re.search(r'class="eval-chart-latest">(1.000|4.0|8.5)</span>', chart)


# ---- access -------------------------------------------------------------------------------------

def test_another_bases_sets_and_runs_are_404_like_missing_ones(researcher, sample_index):
    secret = kb_create(slug="secret", name="Secret base")
    hidden_set = QuestionSet.objects.create(knowledge_base_id=secret.id, name="Secret questions",
                                            questions=[])
    hidden_run = done_run(hidden_set, summary={"hit_at_1": 0.9}, questions=[])
    import_set(researcher)
    mine = done_run(QuestionSet.objects.get(name="demo"), summary={}, questions=[])
    for url in (f"{PANEL}sets/{hidden_set.pk}/", f"{PANEL}runs/{hidden_run.pk}/",
                f"{PANEL}runs/{hidden_run.pk}/row", f"{PANEL}runs/{hidden_run.pk}/status",
                f"{PANEL}?set={hidden_set.pk}", f"{PANEL}sets/999999/", f"{PANEL}runs/999999/"):
        assert researcher.get(url).status_code == 404, url
    compare = researcher.get(f"{PANEL}compare/", {"run": [mine.pk, hidden_run.pk]})
    assert compare.status_code == 404
    panel = researcher.get(PANEL).content.decode()
    assert "Secret questions" not in panel and f'id="run-{hidden_run.pk}"' not in panel
    refused = launch(researcher, hidden_set)
    assert (refused.status_code == 422
            and EvalRun.objects.filter(question_set=hidden_set).count() == 1)
    assert import_set(researcher, name="sneaky", slug="secret").status_code == 422
    assert not QuestionSet.objects.filter(name="sneaky").exists()


def test_a_person_with_a_grant_on_the_other_base_sees_it(person, sample_index):
    secret = kb_create(slug="secret", name="Secret base")
    hidden_set = QuestionSet.objects.create(knowledge_base_id=secret.id, name="Secret questions",
                                            questions=[])
    client = person("insider", grants={"secret": Grant.RESEARCHER})
    assert client.get(f"{PANEL}sets/{hidden_set.pk}/").status_code == 200
    assert "Secret questions" in client.get(PANEL).content.decode()


def test_the_panel_needs_a_sign_in(client, db):
    response = client.get(PANEL)
    assert response.status_code == 302 and response["Location"].startswith("/workbench/login/")


@pytest.mark.parametrize("query", ["set=%C2%B2", "set=abc", "set=-1", "set="])
def test_a_set_parameter_that_is_no_id_is_ignored(researcher, query):
    response = researcher.get(f"/workbench/evaluation/?{query}")
    assert response.status_code == 200 and "<h1>Evaluation</h1>" in response.content.decode()


def test_a_set_id_beyond_any_row_is_not_found(researcher):
    assert researcher.get("/workbench/evaluation/?set=99999999999999999999").status_code == 404


@pytest.mark.parametrize("query", ["run=%C2%B2&run=1", "run=1&run=x", "run=1", "run=1&run=1"])
def test_comparing_without_two_run_ids_is_a_bad_request(researcher, query):
    response = researcher.get(f"/workbench/evaluation/compare/?{query}")
    assert response.status_code == 400
    assert "Select exactly two different runs" in response.content.decode()
