"""No person sees anything of a knowledge base they may not read through any workbench page:
Ask (whole and streamed), the retrieval lab, source views, knowledge pages, jobs, status, the
evaluation panel, traces and feedback.

The two bases of tests/api/leaks_fixtures.py (`alpha`, `beta`, each note carrying its base's
marker word and identifier), with their people: ana researches alpha, bo researches beta, mo
maintains beta, cy researches both, nobody reads nothing; rita only reads alpha, and rae
researches alpha but only reads beta. Every check that a person sees one base has a twin
showing that cy, with the same request, sees both, so no check passes because the other base
never matched. Built once per module inside a transaction that is rolled back afterwards.

The researcher role's pages (the lab, evaluation, traces) and numbers (a source card's score,
an answer's confidence) are checked for rita and rae: a reader sees answers and sources only.
"""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client

from access.callers import caller_for_user
from evaluation.models import EvalRun, QuestionSet
from knowledge.documents import document_upload
from knowledge.models import Document
from tests.api.leaks_fixtures import QUERY, QUESTION, raw_check, slugs_seen, world_build

LAB = {"mode": "hybrid", "top_k": "10", "candidates": "50", "rerank": "features"}
PEOPLE = {"ana": {"alpha"}, "bo": {"beta"}, "mo": {"beta"}, "nobody": set()}
OTHER = {"alpha": "beta", "beta": "alpha"}
# The pages of the researcher role: 403 for a person who researches no base.
RESEARCH_PAGES = {"/workbench/lab/", "/workbench/lab/run", "/workbench/evaluation/",
                  "/workbench/traces/"}


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    """Both bases, the people, and in beta: an upload job, a question set with a run, and a
    traced answer of bo's."""
    with django_db_blocker.unblock(), transaction.atomic():
        built = world_build(tmp_path_factory.mktemp("page-leaks"))
        users = get_user_model().objects
        mo = users.get(username="mo")
        upload = document_upload(caller=caller_for_user(mo), slug="beta",
                                 filename="quokkalith-upload.md",
                                 chunks=[b"# Quokkalith upload\n\nBETA-4409 quokkalith notes.\n"])
        built.job_ids = {"beta": upload.job_id}
        question_set = QuestionSet.objects.create(
            knowledge_base_id=built.base_ids["beta"], name="quokkalith questions",
            questions=[{"id": "q1", "question": "quokkalith kitchen?",
                        "expected_mode": "rag", "expected_sources": ["quokkalith/log-0.md"]}])
        runs = [EvalRun.objects.create(question_set=question_set,
                                       knowledge_base_id=built.base_ids["beta"], status="done",
                                       summary={"hit_at_1": 1.0}) for _ in range(2)]
        built.set_ids = {"beta": question_set.pk}
        built.run_ids = {"beta": [run.pk for run in runs]}
        bo = _client("bo")
        built.trace_ids = {"beta": bo.post("/workbench/ask/", {"question": QUESTION})[
            "X-Request-ID"]}
        yield built
        transaction.set_rollback(True)


def _client(username: str, *, staff: bool = False) -> Client:
    user = get_user_model().objects.get(username=username)
    if staff and not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def _evaluation_pages(world, slug: str) -> tuple[str, ...]:
    """Every page of a base's question set and runs: the set, a run, its status and row, the
    history filtered to the set, and two runs compared."""
    set_id, (run_id, other_run_id) = world.set_ids[slug], world.run_ids[slug]
    return (f"/workbench/evaluation/sets/{set_id}/", f"/workbench/evaluation/runs/{run_id}/",
            f"/workbench/evaluation/runs/{run_id}/status",
            f"/workbench/evaluation/runs/{run_id}/row", f"/workbench/evaluation/?set={set_id}",
            f"/workbench/evaluation/compare/?run={run_id}&run={other_run_id}")


def _text(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def _result(response) -> str:
    """What a request returned beyond the echo of its own form: the answer section of the Ask
    page, the events of a stream, the lab's results fragment."""
    text = _text(response)
    answer = re.search(r'<section id="answer".*?</section>', text, re.DOTALL)
    return answer.group(0) if answer else text


@pytest.mark.usefixtures("db")
class TestPages:
    @pytest.mark.parametrize("person", sorted(PEOPLE))
    @pytest.mark.parametrize("path", ["/workbench/ask/", "/workbench/lab/",
                                      "/workbench/knowledge/", "/workbench/status/",
                                      "/workbench/evaluation/"])
    def test_no_page_names_another_base(self, world, person, path):
        response = _client(person).get(path)
        studies = bool(PEOPLE[person])  # each of them researches or maintains what it reads
        assert response.status_code == (200 if studies or path not in RESEARCH_PAGES else 403)
        raw_check(_text(response), PEOPLE[person])

    def test_a_reader_of_both_sees_both_on_the_knowledge_page(self, world):
        text = _client("cy").get("/workbench/knowledge/").content.decode()
        assert "Zephyrine Handbook" in text and "Quokkalith Archive" in text

    @pytest.mark.parametrize("person", ["ana", "bo", "nobody"])
    @pytest.mark.parametrize("path, field, text", [
        ("/workbench/ask/", "question", QUESTION),
        ("/workbench/ask/stream", "question", QUESTION),
        ("/workbench/lab/run", "query", QUERY),
    ])
    def test_answers_and_lab_runs_hold_only_the_persons_bases(self, world, person, path,
                                                              field, text):
        response = _client(person).post(path, {field: text, **LAB}, HTTP_HX_REQUEST="true")
        # Reading no base at all is "not ready" (503), as on the API; the lab is refused.
        refused = 403 if path in RESEARCH_PAGES else 503
        assert response.status_code == (200 if PEOPLE[person] else refused)
        body = _result(response)
        raw_check(body, PEOPLE[person])
        assert slugs_seen(body) <= PEOPLE[person]

    @pytest.mark.parametrize("path, field, text", [
        ("/workbench/ask/", "question", QUESTION),
        ("/workbench/ask/stream", "question", QUESTION),
        ("/workbench/lab/run", "query", QUERY),
    ])
    def test_the_same_request_by_a_reader_of_both_sees_both(self, world, path, field, text):
        body = _result(_client("cy").post(path, {field: text, **LAB}, HTTP_HX_REQUEST="true"))
        assert slugs_seen(body) == {"alpha", "beta"}

    @pytest.mark.parametrize("person", ["ana", "bo"])
    def test_another_bases_chunks_are_not_found_like_missing_ones(self, world, person):
        client = _client(person)
        mine = next(iter(world.chunk_ids[next(iter(PEOPLE[person]))]))
        assert client.get(f"/workbench/chunks/{mine}/").status_code == 200
        missing = client.get("/workbench/chunks/999999/")
        for chunk_id in sorted(world.chunk_ids[OTHER[next(iter(PEOPLE[person]))]])[:5]:
            response = client.get(f"/workbench/chunks/{chunk_id}/")
            assert response.status_code == 404 == missing.status_code
            assert _masked(response, chunk_id) == _masked(missing, 999999)
            for document_id in sorted(world.document_ids[OTHER[next(iter(PEOPLE[person]))]])[:2]:
                assert client.get(f"/workbench/documents/{document_id}/pages/1.png"
                                  ).status_code == 404

    @pytest.mark.parametrize("person", ["ana", "bo"])
    def test_another_bases_document_pages_are_not_found_like_missing_ones(self, world, person):
        client = _client(person)
        mine = sorted(world.document_ids[next(iter(PEOPLE[person]))])[0]
        assert client.get(f"/workbench/documents/{mine}/").status_code == 200
        missing = client.get("/workbench/documents/999999/")
        for document_id in sorted(world.document_ids[OTHER[next(iter(PEOPLE[person]))]])[:3]:
            response = client.get(f"/workbench/documents/{document_id}/")
            assert response.status_code == 404 == missing.status_code
            assert _masked(response, document_id) == _masked(missing, 999999)
        both = _client("cy")
        assert both.get(f"/workbench/documents/{mine}/").status_code == 200

    def test_another_bases_knowledge_page_is_not_found_like_a_missing_one(self, world):
        client = _client("ana")
        hidden, missing = client.get("/workbench/knowledge/beta/"), client.get(
            "/workbench/knowledge/gama/")
        assert hidden.status_code == missing.status_code == 404
        assert _masked(hidden).replace(b"beta", b"gama") == _masked(missing)
        assert _client("bo").get("/workbench/knowledge/beta/").status_code == 200

    def test_another_bases_job_is_not_found(self, world):
        job_id = world.job_ids["beta"]
        assert _client("ana").get(f"/workbench/jobs/{job_id}/").status_code == 404
        assert _client("mo").get(f"/workbench/jobs/{job_id}/").status_code == 200

    def test_another_bases_question_sets_and_runs_are_not_found(self, world):
        ana, bo = _client("ana"), _client("bo")
        for path in _evaluation_pages(world, "beta"):
            assert ana.get(path).status_code == 404, path
            assert bo.get(path).status_code == 200, path
        assert "quokkalith questions" not in ana.get("/workbench/evaluation/").content.decode()
        assert "quokkalith questions" in bo.get("/workbench/evaluation/").content.decode()

    @pytest.mark.parametrize("staff", [False, True])
    def test_traces_of_another_base_are_neither_listed_nor_shown(self, world, staff):
        trace_id = world.trace_ids["beta"]
        ana = _client("ana", staff=staff)
        listing = ana.get("/workbench/traces/").content.decode()
        assert trace_id not in listing
        raw_check(listing, {"alpha"})
        assert ana.get(f"/workbench/traces/{trace_id}/").status_code == 404
        bo = _client("bo", staff=staff)
        assert trace_id in bo.get("/workbench/traces/").content.decode()
        assert bo.get(f"/workbench/traces/{trace_id}/").status_code == 200

    def test_feedback_on_another_persons_answer_is_not_found(self, world):
        response = _client("ana").post("/workbench/feedback/", {
            "trace_id": world.trace_ids["beta"], "rating": "down"})
        assert response.status_code == 404
        raw_check(response.content.decode(), {"alpha"})



# A number the answer shows: "confidence 0.532"; a card's score is a span of class "score".
_CONFIDENCE = re.compile(r"confidence \d")


def _answer(response) -> str:
    """The answer as HTML: the page's answer section, or a stream's `result` event."""
    body = _result(response)
    result = re.search(r"^event: result\ndata: (.*)$", body, re.MULTILINE)
    return json.loads(result.group(1))["html"] if result else body


def _cards(html: str) -> list[str]:
    return html.split('<li class="source-card"')[1:]


@pytest.mark.usefixtures("db")
class TestResearcherRole:
    """rita only reads alpha; rae researches alpha and only reads beta."""

    @pytest.mark.parametrize("path", ["/workbench/ask/", "/workbench/ask/stream"])
    def test_a_reader_sees_answers_and_sources_without_numbers(self, world, path):
        body = _answer(_client("rita").post(path, {"question": QUESTION},
                                            HTTP_HX_REQUEST="true"))
        assert _cards(body), "the answer has its source cards"
        assert 'class="score"' not in body and not _CONFIDENCE.search(body)
        raw_check(body, {"alpha"})
        both = _answer(_client("cy").post(path, {"question": QUESTION}, HTTP_HX_REQUEST="true"))
        assert 'class="score"' in both and _CONFIDENCE.search(both)

    def test_a_researcher_sees_scores_only_on_cards_of_the_bases_it_studies(self, world):
        body = _answer(_client("rae").post("/workbench/ask/", {"question": QUESTION}))
        cards = _cards(body)
        alpha = [card for card in cards if "zephyrine" in card.lower()]
        beta = [card for card in cards if "quokkalith" in card.lower()]
        assert alpha and beta, "rae reads both: the question matches both"
        assert all('class="score"' in card for card in alpha)
        assert not any('class="score"' in card for card in beta)
        # The confidence ranks beta's chunks too: not shown over a base rae only reads.
        assert not _CONFIDENCE.search(body)
        studied = _answer(_client("rae").post("/workbench/ask/", {
            "question": QUESTION, "knowledge_base": "alpha"}))
        assert _CONFIDENCE.search(studied) and 'class="score"' in studied

    @pytest.mark.parametrize("path", ["/workbench/lab/", "/workbench/evaluation/",
                                      "/workbench/traces/"])
    def test_a_reader_may_not_open_the_lab_evaluation_or_traces(self, world, path):
        rita = _client("rita")
        assert rita.get(path).status_code == 403
        nav = rita.get("/workbench/ask/").content.decode()
        assert f'href="{path}"' not in nav
        assert f'href="{path}"' in _client("rae").get("/workbench/ask/").content.decode()

    def test_a_reader_may_not_run_the_lab(self, world):
        response = _client("rita").post("/workbench/lab/run", {"query": QUERY, **LAB},
                                         HTTP_HX_REQUEST="true")
        assert response.status_code == 403
        assert "zephyrine" not in _text(response).lower()

    def test_the_lab_searches_only_the_bases_a_researcher_studies(self, world):
        rae = _client("rae")
        body = _result(rae.post("/workbench/lab/run", {"query": QUERY, **LAB},
                                HTTP_HX_REQUEST="true"))
        assert slugs_seen(body) == {"alpha"}
        assert "quokkalith archive" not in rae.get("/workbench/lab/").content.decode().lower()
        chosen = rae.post("/workbench/lab/run", {"query": QUERY, "knowledge_base": "beta", **LAB},
                          HTTP_HX_REQUEST="true")
        assert chosen.status_code == 422
        assert slugs_seen(_result(chosen)) <= {"alpha"}

    def test_traces_of_a_base_only_read_are_neither_listed_nor_shown(self, world):
        trace_id = world.trace_ids["beta"]
        rae = _client("rae")
        listing = rae.get("/workbench/traces/")
        assert listing.status_code == 200 and trace_id not in listing.content.decode()
        assert "quokkalith" not in listing.content.decode().lower()
        assert rae.get(f"/workbench/traces/{trace_id}/").status_code == 404
        # A reader is refused every trace, whichever it names: its existence does not show.
        rita = _client("rita")
        assert rita.get(f"/workbench/traces/{trace_id}/").status_code == 403
        assert rita.get("/workbench/traces/6f1c1c3e-0000-4000-8000-000000000000/"
                        ).status_code == 403

    def test_a_question_set_or_run_of_a_base_only_read_is_forbidden(self, world):
        rae, bo = _client("rae"), _client("bo")
        for path in _evaluation_pages(world, "beta"):
            assert rae.get(path).status_code == 403, path
            assert bo.get(path).status_code == 200, path
        assert "quokkalith questions" not in rae.get("/workbench/evaluation/").content.decode()
        # Reading no base it studies, rita is refused the page whatever it names.
        set_page = _evaluation_pages(world, "beta")[0]
        assert _client("rita").get(set_page).status_code == 403

    def test_a_researcher_may_not_upload(self, world):
        upload = b"# Zephyrine upload\n\nALPHA-7731 zephyrine notes.\n"
        rae = _client("rae")
        page = rae.get("/workbench/knowledge/alpha/").content.decode()
        assert "/workbench/knowledge/alpha/upload/" not in page
        count = Document.objects.count()
        response = rae.post("/workbench/knowledge/alpha/upload/",
                            {"file": SimpleUploadedFile("zephyrine-upload.md", upload)})
        assert response.status_code == 403 and Document.objects.count() == count


# A page's CSRF tokens differ on every response (Django masks each one afresh); the 404 page is
# a workbench page with forms (the language switch, signing out), so they are set aside.
_CSRF_TOKEN = re.compile(rb'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')


def _masked(response, number: int | None = None) -> bytes:
    """The body without its CSRF tokens, and with `number` as a path segment (the language
    switch's `next`) replaced by N."""
    body = _CSRF_TOKEN.sub(rb"\1-", response.content)
    return body if number is None else re.sub(rb"/%d/" % number, b"/N/", body)
