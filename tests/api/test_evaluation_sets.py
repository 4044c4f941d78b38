"""POST/GET/PUT /evaluation/sets: question sets from JSON or YAML, bounded, versioned (frozen
once a run used a version), for researchers, maintainers and admins of their base."""

from __future__ import annotations

import pytest

from evaluation.models import QuestionSet, QuestionSetVersion
from evaluation.versions import SET_QUESTIONS_MAX, SET_YAML_MAX_CHARS
from tests.api.evaluation_world import (
    IN_DOMAIN,
    Headers,
    evaluation_team,
    question,
    run_start,
    send,
    set_create,
)
from tests.api.http import error_of


@pytest.fixture
def bearer(sample_index, config_override) -> Headers:
    return evaluation_team(config_override)


def test_a_yaml_set_is_stored_as_version_1_with_its_questions(client, bearer):
    response = set_create(client, bearer("res"))
    body = response.json()
    assert response.status_code == 201, body
    assert (body["name"], body["knowledge_base"], body["latest_version"]) == ("demo", "default", 1)
    assert [entry["id"] for entry in body["questions"]] == ["q1", "ood"]
    assert body["version"]["number"] == 1 and body["version"]["frozen"] is False
    assert len(body["version"]["content_hash"]) == 64
    assert QuestionSetVersion.objects.get().questions == QuestionSet.objects.get().questions


def test_a_json_set_is_stored_too(client, bearer):
    response = set_create(client, bearer("root"), questions=[
        question("a", IN_DOMAIN, sources=["policies/Support Escalation Policy.md"])])
    assert response.status_code == 201
    assert response.json()["questions"][0]["expected_sources"] == [
        "policies/Support Escalation Policy.md"]


def test_bad_yaml_is_422_with_every_problem_and_nothing_is_stored(client, bearer):
    bad = set_create(client, bearer("res"), yaml="questions: [\n")
    assert bad.status_code == 422
    assert "is not valid YAML" in error_of(bad)["message"]
    invalid = set_create(client, bearer("res"), questions=[
        question("a", "x", mode="perhaps"), {"id": "b"}])
    error = error_of(invalid)
    assert (invalid.status_code, error["code"]) == (422, "invalid_request")
    assert error["details"]["errors"] == [
        "question a (#1): expected_mode must be rag or no_answer",
        "question b (#2) lacks a field: 'question', 'expected_mode'"]
    assert not QuestionSet.objects.exists()


def test_yaml_and_questions_together_or_neither_are_refused(client, bearer):
    both = set_create(client, bearer("res"), yaml="questions: []",
                      questions=[question("a", "x")])
    assert both.status_code == 422 and error_of(both)["details"]["field"] == "questions"
    neither = send(client, "post", "/evaluation/sets",
                   {"knowledge_base": "default", "name": "empty"}, bearer("res"))
    assert neither.status_code == 422 and error_of(neither)["details"]["field"] == "questions"


@pytest.mark.parametrize("body", [
    {"yaml": "#" * (SET_YAML_MAX_CHARS + 1)},
    {"questions": [question(f"q{i}", "x", mode="no_answer")
                   for i in range(SET_QUESTIONS_MAX + 1)]},
])
def test_an_oversized_set_is_413_payload_too_large(client, bearer, body, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000_000
    response = set_create(client, bearer("res"), **body)
    assert (response.status_code, error_of(response)["code"]) == (413, "payload_too_large")


def test_yaml_aliases_and_nul_characters_are_refused(client, bearer):
    aliased = set_create(client, bearer("res"),
                         yaml="a: &x [1]\nquestions:\n  - *x\n")
    assert aliased.status_code == 422 and "aliases" in error_of(aliased)["message"]
    nul = set_create(client, bearer("res"), questions=[question("a", "x\x00y", mode="no_answer")])
    assert nul.status_code == 422


def test_a_taken_name_is_409(client, bearer):
    assert set_create(client, bearer("res")).status_code == 201
    assert set_create(client, bearer("res")).status_code == 409


def test_put_replaces_an_unused_version_and_makes_a_new_one_once_a_run_used_it(client, bearer):
    headers = bearer("res")
    set_id = set_create(client, headers).json()["id"]
    edited = send(client, "put", f"/evaluation/sets/{set_id}",
                  {"questions": [question("only", "x?", mode="no_answer")]}, headers).json()
    assert edited["version"]["number"] == 1 and edited["latest_version"] == 1
    run = run_start(client, headers, set_id).json()
    assert run["set_version"] == 1
    detail = client.get(f"/evaluation/sets/{set_id}", **headers).json()
    assert detail["version"]["frozen"] is True
    again = send(client, "put", f"/evaluation/sets/{set_id}",
                 {"questions": [question("only", "y?", mode="no_answer")]}, headers).json()
    assert again["version"]["number"] == 2 and again["version"]["frozen"] is False
    assert [entry["number"] for entry in again["versions"]] == [1, 2]
    first = client.get(f"/evaluation/sets/{set_id}?version=1", **headers).json()
    assert first["questions"][0]["question"] == "x?"
    run_after = client.get(f"/evaluation/runs/{run['id']}", **headers).json()
    assert run_after["set_version"] == 1
    unchanged = send(client, "put", f"/evaluation/sets/{set_id}",
                     {"questions": [question("only", "y?", mode="no_answer")]}, headers).json()
    assert unchanged["latest_version"] == 2
    missing = client.get(f"/evaluation/sets/{set_id}?version=9", **headers)
    assert missing.status_code == 404


def test_a_reader_is_403_and_an_unseen_base_is_404(client, bearer):
    reader = set_create(client, bearer("ana"))
    assert (reader.status_code, error_of(reader)["code"]) == (403, "forbidden")
    unseen = set_create(client, bearer("res"), slug="hidden")
    assert (unseen.status_code, error_of(unseen)["code"]) == (404, "not_found")
    set_id = set_create(client, bearer("res")).json()["id"]
    assert client.get(f"/evaluation/sets/{set_id}", **bearer("ana")).status_code == 403
    assert send(client, "put", f"/evaluation/sets/{set_id}", {"yaml": "x"},
                bearer("ana")).status_code == 403
    assert client.get(f"/evaluation/sets/{set_id}", **bearer("mo")).status_code == 200


def test_the_list_holds_only_sets_of_bases_the_caller_may_research(client, bearer):
    set_create(client, bearer("res"))
    set_create(client, bearer("root"), slug="hidden", name="secret")
    admin = client.get("/evaluation/sets", **bearer("root")).json()
    assert {entry["name"] for entry in admin["question_sets"]} == {"demo", "secret"}
    researcher = client.get("/evaluation/sets", **bearer("res")).json()
    assert [entry["name"] for entry in researcher["question_sets"]] == ["demo"]
    assert researcher["total"] == 1
    assert client.get("/evaluation/sets", **bearer("ana")).json()["question_sets"] == []
