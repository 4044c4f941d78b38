"""POST/GET /evaluation/runs: a run of a set version queued as a job, what it records (set
version, configuration hash and parameters, prompt and code versions, corpus digest), its
scores (complete_hit@k beside hit@k, out-of-domain questions in refusal only, answers with
their correctness, tokens and cost), the leakage guard, and access by role."""

from __future__ import annotations

import json
import logging
import re

import pytest
from django.db import connection

from answering.prompts import PROMPT_VERSION
from tests.answering.stub_openai import StubOpenAI
from tests.api.evaluation_world import (
    ENV_TOKEN,
    ESCALATION,
    IN_DOMAIN,
    OUT_OF_DOMAIN,
    Headers,
    evaluation_team,
    finished_run,
    question,
    run_start,
    send,
    set_create,
    work,
)
from tests.api.http import error_of

PRICES = json.dumps({"stub-model": {"input_per_1k": 0.5, "output_per_1k": 2, "currency": "EUR"}})


@pytest.fixture
def bearer(sample_index, config_override) -> Headers:
    return evaluation_team(config_override)


def new_set(client, headers, questions: list[dict] | None = None, **body) -> int:
    response = set_create(client, headers, **({"questions": questions} if questions else {}),
                          **body)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_a_run_is_queued_and_records_what_makes_it_reproducible(client, bearer):
    headers = bearer("res")
    set_id = new_set(client, headers)
    started = run_start(client, headers, set_id, top_k=4, retrieval="lexical")
    queued = started.json()
    assert started.status_code == 202
    assert (queued["status"], queued["set_version"], queued["knowledge_bases"]) == (
        "queued", 1, ["default"])
    assert queued["job_id"] and queued["corpus_digest"] is None
    work()
    run = client.get(f"/evaluation/runs/{queued['id']}", **headers).json()
    assert run["status"] == "done"
    assert re.fullmatch(r"[0-9a-f]{12}", run["config_hash"])
    assert run["prompt_version"] == PROMPT_VERSION
    assert re.fullmatch(r"git:[0-9a-f]{40}|local-rag==.+", run["code_version"])
    assert re.fullmatch(r"[0-9a-f]{64}", run["corpus_digest"])
    parameters = run["parameters"]
    assert (parameters["top_k"], parameters["retrieval"], parameters["answers"]) == (
        4, "lexical", False)
    assert {"rerank", "threshold", "embedding"} <= set(parameters)
    assert parameters["settings"]["rag_retrieval"] == "lexical"
    assert run["summary"]["questions"] == 2


def test_the_corpus_digest_changes_when_a_document_changes(client, bearer):
    headers = bearer("res")
    set_id = new_set(client, headers)
    first = finished_run(client, headers, set_id)["corpus_digest"]
    assert finished_run(client, headers, set_id)["corpus_digest"] == first
    with connection.cursor() as cursor:
        cursor.execute("UPDATE chunks SET content_hash = 'edited' WHERE relative_path = %s "
                       "AND chunk_index = 0", [ESCALATION])
    assert finished_run(client, headers, set_id)["corpus_digest"] != first


def test_a_run_keeps_evaluating_the_version_it_was_started_on(client, bearer):
    headers = bearer("res")
    set_id = new_set(client, headers)
    finished_run(client, headers, set_id)
    send(client, "put", f"/evaluation/sets/{set_id}",
         {"questions": [question("new", OUT_OF_DOMAIN, mode="no_answer")]}, headers)
    pinned = finished_run(client, headers, set_id, version=1)
    assert pinned["set_version"] == 1 and pinned["summary"]["questions"] == 2
    latest = finished_run(client, headers, set_id)
    assert latest["set_version"] == 2 and latest["summary"]["questions"] == 1


def test_complete_hit_needs_every_expected_source_and_ood_counts_only_in_refusal(client,
                                                                                 bearer):
    headers = bearer("res")
    set_id = new_set(client, headers, [
        question("one", IN_DOMAIN, sources=[ESCALATION]),
        question("two", IN_DOMAIN, sources=[ESCALATION, "policies/Nowhere.md"]),
        question("ood", OUT_OF_DOMAIN, mode="no_answer")])
    run = finished_run(client, headers, set_id, top_k=5)
    summary = run["summary"]
    assert (summary["hit_at_k"], summary["complete_hit_at_k"]) == (1.0, 0.5)
    assert summary["no_answer_recall"] == 1.0 and summary["no_answer_precision"] == 1.0
    rows = {row["id"]: row for row in client.get(
        f"/evaluation/runs/{run['id']}/results", **headers).json()["results"]}
    assert (rows["one"]["hit"], rows["one"]["complete_hit"]) == (True, True)
    assert (rows["two"]["hit"], rows["two"]["complete_hit"]) == (True, False)
    assert (rows["ood"]["hit"], rows["ood"]["complete_hit"], rows["ood"]["refused"]) == (
        None, None, True)
    assert ESCALATION in rows["one"]["sources"]


@pytest.fixture
def priced_stub(bearer, config_override):
    with StubOpenAI() as stub:
        stub.usage = {"prompt_tokens": 300, "completion_tokens": 50, "total_tokens": 350}
        stub.answer = "P1 工单在 **T+30 分钟** 升级到 Engineering Manager on-call [1]."
        config_override(rag_api_token=ENV_TOKEN, llm_provider="openai-compatible",
                        llm_base_url=stub.base_url, llm_model="stub-model",
                        llm_api_key="sk-stub", RAG_MODEL_PRICES=PRICES)
        yield stub


def test_answers_are_scored_with_their_tokens_and_cost(client, bearer, priced_stub):
    headers = bearer("res")
    set_id = new_set(client, headers, [
        question("right", IN_DOMAIN, sources=[ESCALATION],
                 answer_contains=["T+30 分钟", "engineering manager on-call"]),
        question("wrong", IN_DOMAIN, sources=[ESCALATION], answer_contains=["SRE on-call"]),
        question("ood", OUT_OF_DOMAIN, mode="no_answer")])
    run = finished_run(client, headers, set_id, answers=True)
    summary = run["summary"]
    assert (summary["answer_questions"], summary["answer_correct"]) == (2, 0.5)
    assert (summary["prompt_tokens"], summary["completion_tokens"]) == (600, 100)
    # two answers of 300 × 0.5 / 1000 + 50 × 2 / 1000; the refusal asks no model
    assert run["cost"] == {"amount": pytest.approx(0.5), "currency": "EUR"}
    rows = {row["id"]: row for row in client.get(
        f"/evaluation/runs/{run['id']}/results", **headers).json()["results"]}
    assert (rows["right"]["answer_correct"], rows["wrong"]["answer_correct"]) == (True, False)
    assert rows["right"]["cost"] == {"amount": pytest.approx(0.25), "currency": "EUR"}
    assert rows["ood"]["cost"] is None and rows["ood"]["answer_mode"] == "no_answer"


def test_a_question_copied_into_a_document_is_a_leakage_warning(client, bearer, caplog):
    headers = bearer("res")
    copied = "Which Runbook Says To Page The  Storage Team First?"
    with connection.cursor() as cursor:
        cursor.execute("UPDATE chunks SET content = content || %s WHERE relative_path = %s "
                       "AND chunk_index = 0", ["\n" + copied.lower(), ESCALATION])
    set_id = new_set(client, headers, [
        question("leak", copied, mode="no_answer"),
        question("short", "P1?", mode="no_answer"),
        question("clean", IN_DOMAIN, sources=[ESCALATION])])
    with caplog.at_level(logging.WARNING, logger="localrag.evaluation"):
        run = finished_run(client, headers, set_id)
    assert run["leakage"] == [{"question_id": "leak", "field": "question",
                               "document": ESCALATION, "chunk_index": 0}]
    assert "1 question(s) appear verbatim" in caplog.text and "leak" in caplog.text


def test_results_are_paged_and_exported_as_csv_safe_from_formulas_and_as_json(client, bearer):
    headers = bearer("res")
    set_id = new_set(client, headers, [
        question("q1", IN_DOMAIN, sources=[ESCALATION]),
        question("q2", "=HYPERLINK(\"http://example.invalid\") 天气", mode="no_answer")])
    pending = run_start(client, headers, set_id).json()
    refused = client.get(f"/evaluation/runs/{pending['id']}/export?format=csv", **headers)
    assert (refused.status_code, error_of(refused)["code"]) == (409, "conflict")
    work()
    page = client.get(f"/evaluation/runs/{pending['id']}/results?limit=1&offset=1",
                      **headers).json()
    assert (page["total"], [row["id"] for row in page["results"]]) == (2, ["q2"])
    exported = client.get(f"/evaluation/runs/{pending['id']}/export?format=csv", **headers)
    assert exported["Content-Type"].startswith("text/csv")
    assert exported["Content-Disposition"] == (
        f'attachment; filename="evaluation-run-{pending["id"]}.csv"')
    lines = exported.content.decode().splitlines()
    assert lines[0].startswith("id,question,expected_mode,mode,passed")
    assert lines[2].startswith("q2,\"'=HYPERLINK(")
    as_json = client.get(f"/evaluation/runs/{pending['id']}/export?format=json", **headers)
    body = json.loads(as_json.content)
    assert body["run"]["id"] == pending["id"] and len(body["results"]) == 2
    assert client.get(f"/evaluation/runs/{pending['id']}/export?format=xml",
                      **headers).status_code == 422


def test_access_researcher_and_admin_run_a_reader_is_403_an_unseen_base_404(client, bearer):
    set_id = new_set(client, bearer("res"))
    assert run_start(client, bearer("res"), set_id).status_code == 202
    assert run_start(client, bearer("root"), set_id).status_code == 202
    assert run_start(client, bearer("mo"), set_id).status_code == 202
    reader = run_start(client, bearer("ana"), set_id)
    assert (reader.status_code, error_of(reader)["code"]) == (403, "forbidden")
    unseen = run_start(client, bearer("res"), set_id, knowledge_bases=["default", "hidden"])
    assert (unseen.status_code, error_of(unseen)["code"]) == (404, "not_found")
    hidden_set = new_set(client, bearer("root"), name="secret", slug="hidden",
                         questions=[question("x", OUT_OF_DOMAIN, mode="no_answer")])
    hidden_run = run_start(client, bearer("root"), hidden_set).json()["id"]
    both = run_start(client, bearer("root"), set_id, knowledge_bases=["default", "hidden"])
    assert both.json()["knowledge_bases"] == ["default", "hidden"]
    assert client.get(f"/evaluation/runs/{hidden_run}", **bearer("res")).status_code == 404
    over_default = run_start(client, bearer("root"), hidden_set,
                             knowledge_bases=["default"]).json()["id"]
    assert client.get(f"/evaluation/runs/{over_default}", **bearer("res")).status_code == 404
    assert client.get(f"/evaluation/runs/{hidden_run}/results",
                      **bearer("res")).status_code == 404
    listed = client.get("/evaluation/runs", **bearer("res")).json()
    assert listed["total"] == 3 and all(run["knowledge_bases"] == ["default"]
                                        for run in listed["runs"])
    assert client.get("/evaluation/runs", **bearer("root")).json()["total"] == 6
    assert client.get("/evaluation/runs", **bearer("ana")).json()["runs"] == []
    first = listed["runs"][-1]["id"]
    assert client.get(f"/evaluation/runs/{first}", **bearer("ana")).status_code == 403
    assert client.get(f"/evaluation/runs?question_set={hidden_set}",
                      **bearer("root")).json()["total"] == 2


def test_rag_api_token_runs_an_evaluation_that_no_person_launched(client, bearer):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {ENV_TOKEN}"}
    set_id = new_set(client, headers)
    queued = run_start(client, headers, set_id).json()
    work()
    run = client.get(f"/evaluation/runs/{queued['id']}", **headers).json()
    assert run["status"] == "done", run.get("error")
    assert run["summary"]["questions"] >= 1


def test_a_run_whose_launcher_became_a_reader_fails_and_says_why(client, bearer):
    from access.people import grant_set

    set_id = new_set(client, bearer("res"))
    queued = run_start(client, bearer("res"), set_id).json()
    grant_set(username="res", slug="default", role="reader")
    work()
    run = client.get(f"/evaluation/runs/{queued['id']}", **bearer("root")).json()
    assert run["status"] == "failed"
    assert "may no longer research" in run["error"]
