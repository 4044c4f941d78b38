"""`rag review list|show|accept|fix|exclude`: the queue as the local operator, in text and
--json."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from tests.review.conftest import rows

pytestmark = pytest.mark.django_db


def review(*args: str) -> str:
    out = io.StringIO()
    call_command("review", *args, stdout=out)
    return out.getvalue()


def test_list_and_show_as_json(review_vault):
    listed = json.loads(review("list", "--kb", "field", "--json"))
    assert listed["total"] == 1
    task = listed["tasks"][0]
    assert (task["kind"], task["status"]) == ("table", "open")
    shown = json.loads(review("show", str(task["id"]), "--json"))
    assert shown["rows"][2] == ["S-2", "220 V", "45%"]
    assert [flag["text"] for flag in shown["flags"]] == ["12 kg", "3.5 mm", "220 V", "45%"]


def test_list_in_text_names_each_task(review_vault):
    text = review("list", "--status", "open")
    assert "table field/table.pdf page 1 table 1, 4 flagged" in text
    assert text.rstrip().endswith("1 of 1 tasks")


def test_accept_and_exclude_by_id(review_vault):
    task_id = json.loads(review("list", "--json"))["tasks"][0]["id"]
    excluded = json.loads(review("exclude", str(task_id), "--note", "blurred", "--json"))
    assert (excluded["status"], excluded["note"]) == ("excluded", "blurred")
    assert rows("SELECT type FROM background_jobs WHERE id = %s", [excluded["job_id"]]) == [
        ("review_exclude",)]
    with pytest.raises(SystemExit) as stopped:
        review("accept", str(task_id))
    assert stopped.value.code != 0


def test_fix_reads_the_text_from_a_file(review_vault, tmp_path):
    task_id = json.loads(review("list", "--json"))["tasks"][0]["id"]
    corrected = tmp_path / "page.txt"
    corrected.write_text("Corrected page: S-1 weighs 12.5 kg.", encoding="utf-8")
    fixed = json.loads(review("fix", str(task_id), "--text-file", str(corrected), "--json"))
    assert fixed["status"] == "fixed" and fixed["corrected_text"].endswith("12.5 kg.")
