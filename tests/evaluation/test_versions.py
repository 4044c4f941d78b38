"""Question set versions made by migration for sets from before them, and the pieces of a run's
record and export that need no run: the code version, answer correctness, CSV cells."""

from __future__ import annotations

import importlib
import subprocess

import pytest
from django.apps import apps

from evaluation import records
from evaluation.answers import answer_correct, answers_summary
from evaluation.export import csv_cell
from evaluation.models import EvalRun, QuestionSet, QuestionSetVersion
from evaluation.versions import content_hash
from knowledge.bases import kb_get

MIGRATION = importlib.import_module("evaluation.migrations.0002_question_set_versions")
QUESTIONS = [{"id": "a", "question": "x?", "expected_mode": "no_answer"}]


def test_a_set_from_before_versions_becomes_version_1_and_its_runs_point_at_it(db):
    base = kb_get("default").id
    used = QuestionSet.objects.create(knowledge_base_id=base, name="used", questions=QUESTIONS)
    unused = QuestionSet.objects.create(knowledge_base_id=base, name="unused", questions=[])
    run = EvalRun.objects.create(question_set=used, knowledge_base_id=base)
    MIGRATION.sets_become_version_one(apps, None)
    version = QuestionSetVersion.objects.get(question_set=used)
    assert (version.number, version.questions) == (1, QUESTIONS)
    assert version.content_hash == content_hash(QUESTIONS)
    assert version.frozen_at == run.created_at
    run.refresh_from_db()
    assert run.set_version == version and run.knowledge_base_ids == [base]
    assert QuestionSetVersion.objects.get(question_set=unused).frozen_at is None


def test_the_code_version_is_the_package_version_without_git(monkeypatch):
    records.code_version.cache_clear()
    monkeypatch.setattr(records.shutil, "which", lambda name: None)
    monkeypatch.setattr(records.importlib.metadata, "version", lambda name: "9.9.9")
    try:
        assert records.code_version() == "local-rag==9.9.9"
    finally:
        records.code_version.cache_clear()


def test_a_git_that_hangs_falls_back_to_the_package_version(monkeypatch):
    records.code_version.cache_clear()

    def hang(*args, **kwargs):
        raise subprocess.TimeoutExpired(cmd="git", timeout=records.GIT_TIMEOUT_SECONDS)

    monkeypatch.setattr(records.subprocess, "run", hang)
    monkeypatch.setattr(records.importlib.metadata, "version", lambda name: "1.2.3")
    try:
        assert records.code_version() == "local-rag==1.2.3"
    finally:
        records.code_version.cache_clear()


@pytest.mark.parametrize(("answer", "spans", "correct"), [
    ("升级到 **Engineering  Manager** on-call", ["engineering manager on-call"], True),
    ("SRE on-call", ["SRE on-call", "T+30"], False),
    ("anything", [], None),
])
def test_an_answer_is_correct_when_it_holds_every_span(answer, spans, correct):
    assert answer_correct(answer=answer, spans=spans) is correct


def test_the_cost_of_a_run_is_unknown_when_one_priced_call_is_not():
    priced = {"prompt_tokens": 10, "completion_tokens": 1,
              "cost": {"amount": 0.1, "currency": "EUR"}}
    assert answers_summary({"a": priced, "b": priced})["cost"] == {"amount": 0.2,
                                                                 "currency": "EUR"}
    unpriced = {**priced, "cost": None}
    assert answers_summary({"a": priced, "b": unpriced})["cost"] is None


@pytest.mark.parametrize(("value", "written"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-cmd", "'-cmd"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("plain", "plain"), (-0.5, -0.5), (None, ""),
])
def test_csv_cells_that_a_spreadsheet_would_run_get_a_leading_quote(value, written):
    assert csv_cell(value) == written
