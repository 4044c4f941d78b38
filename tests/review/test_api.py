"""/review/tasks: list and show for researchers and maintainers, accept, exclude (a job takes
the page out of search) and fix (a job builds a new version with the corrected text)."""

from __future__ import annotations

import json

import pytest

from access.api_tokens import token_create
from tests.api.http import error_of, post
from tests.review.conftest import TABLE_MARKER, needs_ocr, rows, search, work


def only_task(client) -> dict:
    body = json.loads(client.get("/review/tasks").content)
    assert body["total"] == 1
    return body["tasks"][0]


def test_the_queue_lists_and_shows_a_table_task(client, clean_tables, review_vault):
    task = only_task(client)
    assert (task["kind"], task["page"], task["status"], task["source"]) == (
        "table", 1, "open", "table.pdf")
    assert task["knowledge_base"] == "field" and task["current"] is True
    shown = json.loads(client.get(f"/review/tasks/{task['id']}").content)
    assert shown["rows"][1] == ["S-1", "12 kg", "3.5 mm"]
    assert len(shown["bbox"]) == 4
    assert json.loads(client.get("/review/tasks?kind=ocr_page").content)["total"] == 0
    assert json.loads(client.get("/review/tasks?status=open&kind=table").content)["total"] == 1


def test_accept_marks_the_task_and_changes_nothing_else(client, clean_tables, review_vault):
    task = only_task(client)
    response = post(client, f"/review/tasks/{task['id']}/accept", {"note": "checked"})
    assert response.status_code == 200
    accepted = json.loads(response.content)
    assert (accepted["status"], accepted["note"], accepted["job_id"]) == ("accepted", "checked",
                                                                          None)
    assert accepted["resolved_by"] and accepted["resolved_at"]
    assert search(client, TABLE_MARKER)
    again = post(client, f"/review/tasks/{task['id']}/accept", {})
    assert again.status_code == 409 and error_of(again)["details"]["status"] == "accepted"


def test_exclude_takes_the_page_out_of_search_through_a_job(client, clean_tables, review_vault):
    assert any(TABLE_MARKER in hit["content"] for hit in search(client, TABLE_MARKER))
    task = only_task(client)
    excluded = json.loads(post(client, f"/review/tasks/{task['id']}/exclude", {}).content)
    assert excluded["status"] == "excluded" and excluded["job_id"]
    work()
    job = json.loads(client.get(f"/jobs/{excluded['job_id']}").content)
    assert job["status"] == "succeeded" and job["result"]["chunks_removed"] >= 1
    assert not any(TABLE_MARKER in hit["content"] for hit in search(client, TABLE_MARKER))


def test_exclusion_leaves_the_other_pages_searchable(client, clean_tables, tmp_path,
                                                     config_override):
    from knowledge.bases import kb_create
    from tests.knowledge.test_ingest import write
    from tests.parsing.formats.files import ruled_table_pdf_bytes
    from tests.review.conftest import TABLE_ROWS, ingest

    kb_create(slug="field", name="Field reports")
    first_page = "Stibnite lenses along the northern fault zone of the survey area. " * 12
    write(tmp_path, "two.pdf", ruled_table_pdf_bytes(
        TABLE_ROWS, before=f"{TABLE_MARKER} weighing log.", pages_before=[first_page]))
    ingest(tmp_path, config_override())
    task = only_task(client)
    assert task["page"] == 2
    # A body-less POST is refused like any API body that is not JSON; `{}` is the least.
    assert client.post(f"/review/tasks/{task['id']}/exclude").status_code == 415
    assert post(client, f"/review/tasks/{task['id']}/exclude", {}).status_code == 200
    work()
    assert not any(TABLE_MARKER in hit["content"] for hit in search(client, TABLE_MARKER))
    assert any("Stibnite" in hit["content"] for hit in search(client, "Stibnite"))
    assert rows("SELECT min(page_start), max(page_end) FROM chunks") == [(1, 1)]


def test_an_exclusion_stays_when_the_same_file_is_built_again(client, clean_tables,
                                                              review_vault):
    from access.callers import OPERATOR
    from knowledge.documents import document_reindex

    task = only_task(client)
    post(client, f"/review/tasks/{task['id']}/exclude", {})
    work()
    document_reindex(caller=OPERATOR, document_id=task["document_id"])
    work()
    assert rows("SELECT t.status FROM review_tasks t JOIN documents d "
                "ON d.active_version_id = t.document_version_id") == [("excluded",)]
    assert not any(TABLE_MARKER in hit["content"] for hit in search(client, TABLE_MARKER))


def test_fix_builds_a_new_version_with_the_text_and_keeps_the_original(client, clean_tables,
                                                                       review_vault):
    task = only_task(client)
    fixed = json.loads(post(client, f"/review/tasks/{task['id']}/fix",
                            {"text": "Scheelite weighing log; S-1 weighs 12.5 kg."}).content)
    assert fixed["status"] == "fixed" and fixed["corrected_text"].startswith("Scheelite")
    work()
    versions = rows("SELECT status FROM document_versions WHERE document_id = %s ORDER BY id",
                    [task["document_id"]])
    assert versions == [("superseded",), ("active",)]
    assert any("Scheelite" in hit["content"] for hit in search(client, "Scheelite"))
    assert not any(TABLE_MARKER in hit["content"] for hit in search(client, TABLE_MARKER))
    # The task of the original version keeps its text; the new version is marked reviewed.
    original = json.loads(client.get(f"/review/tasks/{task['id']}").content)
    assert TABLE_MARKER in original["extracted_text"] and original["current"] is False
    assert rows("SELECT metadata -> 'reviewed_pages' FROM documents") == [("[1]",)]


@pytest.mark.parametrize("body", [{"text": ""}, {"text": "x" * 100_001}, {}])
def test_a_fix_without_usable_text_is_refused(client, clean_tables, review_vault, body):
    task = only_task(client)
    response = post(client, f"/review/tasks/{task['id']}/fix", body)
    assert response.status_code == 422 and error_of(response)["code"] == "invalid_request"
    assert only_task(client)["status"] == "open"


def test_readers_are_refused_and_strangers_see_nothing(client, clean_tables, review_vault):
    from django.contrib.auth import get_user_model

    from access.models import Grant
    from knowledge.models import KnowledgeBase

    users = get_user_model().objects
    field = KnowledgeBase.objects.get(slug="field")
    for username, role in (("rita", Grant.READER), ("rex", Grant.RESEARCHER),
                           ("mo", Grant.MAINTAINER)):
        Grant.objects.create(user=users.create_user(username), knowledge_base=field, role=role)
    users.create_user("sam")
    task = only_task(client)
    url = f"/review/tasks/{task['id']}"

    def as_(name: str) -> dict:
        return {"HTTP_AUTHORIZATION": f"Bearer {token_create(username=name).secret}"}

    reader, researcher, maintainer, stranger = (as_(name) for name in ("rita", "rex", "mo", "sam"))
    assert client.get(url, **reader).status_code == 403
    assert json.loads(client.get("/review/tasks", **reader).content)["total"] == 0
    assert client.get(url, **stranger).status_code == 404
    assert client.get("/review/tasks?knowledge_base=field", **stranger).status_code == 404
    assert client.get(url, **researcher).status_code == 200
    refused = client.post(f"{url}/accept", "{}", content_type="application/json", **researcher)
    assert refused.status_code == 403 and error_of(refused)["code"] == "forbidden"
    assert client.post(f"{url}/exclude", "{}", content_type="application/json",
                       **stranger).status_code == 404
    assert client.post(f"{url}/accept", "{}", content_type="application/json",
                       **maintainer).status_code == 200


def test_an_unknown_task_is_404(client, db):
    response = client.get("/review/tasks/999999")
    assert response.status_code == 404 and error_of(response)["code"] == "not_found"


@needs_ocr
def test_a_scanned_page_fixed_is_found_by_its_corrected_words(client, clean_tables, scan_vault):
    task = only_task(client)
    assert task["kind"] == "ocr_page" and "ZK-7731" in task["extracted_text"]
    post(client, f"/review/tasks/{task['id']}/fix", {"text": "Hole ZK-7731 molybdenite log"})
    work()
    assert any("molybdenite" in hit["content"] for hit in search(client, "molybdenite"))


def test_each_decision_is_one_audit_entry_and_its_job_adds_none(client, clean_tables,
                                                                review_vault):
    from tests.audit.conftest import entries

    earlier = len(entries())
    task = only_task(client)
    post(client, f"/review/tasks/{task['id']}/fix", {"text": "Scheelite log; S-1 is 12.5 kg.",
                                                      "note": "typo in S-1"})
    work()  # the new version's ingest and its tasks record nothing of their own
    (entry,) = entries()[earlier:]
    assert (entry["action"], entry["object_type"], entry["object_id"]) == (
        "review.fix", "review_task", str(task["id"]))
    assert entry["object_name"] == "table.pdf, page 1, table 1"
    assert entry["source"] == "api"
    assert entry["changes"]["status"] == {"before": "open", "after": "fixed"}
    assert entry["changes"]["note"] == "typo in S-1" and entry["changes"]["corrected_chars"] == 30


def test_a_fix_comes_back_when_the_same_file_is_reindexed(client, clean_tables, review_vault):
    task = only_task(client)
    post(client, f"/review/tasks/{task['id']}/fix", {"text": "Scheelite weighing log, fixed."})
    work()
    queued = client.post(f"/documents/{task['document_id']}/reindex", data=b"",
                         content_type="")
    assert queued.status_code == 202, queued.content
    work()  # the reindex reads the file; the version it stored queues the fix again
    versions = rows("SELECT status FROM document_versions WHERE document_id = %s ORDER BY id",
                    [task["document_id"]])
    assert versions[-1] == ("active",) and len(versions) == 4  # file, fix, file, fix
    assert any("Scheelite" in hit["content"] for hit in search(client, "Scheelite"))
    assert not any(TABLE_MARKER in hit["content"] for hit in search(client, TABLE_MARKER))
    assert rows("SELECT metadata -> 'reviewed_pages' FROM documents") == [("[1]",)]
    work()  # and nothing more: the version with the fix queues no other job
    assert len(rows("SELECT id FROM document_versions WHERE document_id = %s",
                    [task["document_id"]])) == 4
