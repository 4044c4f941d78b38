"""The evaluation run page shows the question set version a run evaluated, its corpus digest,
and the leakage guard's warnings, in English and Chinese; a run over a base the person may not
read is not theirs to see. (The evaluation pages are researchers'.)"""

from __future__ import annotations

from evaluation.models import EvalRun, QuestionSet, QuestionSetVersion
from knowledge.bases import kb_get


def run_with_leakage() -> EvalRun:
    base = kb_get("default").id
    question_set = QuestionSet.objects.create(knowledge_base_id=base, name="demo", questions=[])
    version = QuestionSetVersion.objects.create(question_set=question_set, number=3,
                                                questions=[], content_hash="0" * 64)
    return EvalRun.objects.create(
        question_set=question_set, set_version=version, knowledge_base_id=base,
        knowledge_base_ids=[base], status=EvalRun.DONE, corpus_digest="ab" * 32,
        parameters={"top_k": 5, "retrieval": "hybrid"}, summary={"questions": 1, "passed": 1},
        report={"questions": []},
        leakage=[{"question_id": "q7", "field": "question", "document": "runbooks/Disk.md",
                  "chunk_index": 2}])


def test_the_run_page_shows_its_version_digest_and_leakage(researcher):
    run = run_with_leakage()
    page = researcher.get(f"/workbench/evaluation/runs/{run.pk}/").content.decode()
    assert "Question set version 3" in page and "abababababab" in page
    assert "Possible leakage" in page
    assert '<a href="#question-q7"><code>q7</code></a> — runbooks/Disk.md #2' in page


def test_the_leakage_warning_is_translated(researcher):
    run = run_with_leakage()
    page = researcher.get(f"/workbench/evaluation/runs/{run.pk}/",
                      HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "可能的泄漏" in page and "问题集第 3 版" in page


def test_a_run_over_a_base_the_researcher_may_not_read_is_not_shown(researcher):
    from knowledge.bases import kb_create

    run = run_with_leakage()
    EvalRun.objects.filter(pk=run.pk).update(
        knowledge_base_ids=[run.knowledge_base_id, kb_create(slug="closed").id])
    assert researcher.get(f"/workbench/evaluation/runs/{run.pk}/").status_code == 404
    assert f"/workbench/evaluation/runs/{run.pk}/" not in researcher.get(
        f"/workbench/evaluation/?set={run.question_set_id}").content.decode()


def test_the_run_shows_complete_hit_answer_correctness_and_cost(researcher):
    run = run_with_leakage()
    EvalRun.objects.filter(pk=run.pk).update(
        summary={"questions": 2, "passed": 2, "complete_hit_at_k": 0.5, "answer_correct": 0.75},
        cost={"amount": 0.0123, "currency": "EUR"})
    page = researcher.get(f"/workbench/evaluation/runs/{run.pk}/").content.decode()
    assert "CompleteHit@k" in page and "0.500" in page
    assert "Answer correctness" in page and "0.750" in page
    assert "cost 0.0123 EUR" in page
