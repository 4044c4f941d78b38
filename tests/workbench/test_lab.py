"""The retrieval lab: per-run parameters, the stages side by side as search's explain output
says, refusals before anything runs, and a trace of every run."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from access.callers import caller_for_user
from access.models import Grant
from core.config import get_config
from knowledge.bases import kb_create, kb_get
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.harness import config_changed
from traces.models import Trace

QUERY = "How long does a P1 incident have before it is escalated?"
HTMX = {"HTTP_HX_REQUEST": "true"}


def run(client, *, htmx: bool = True, **fields):
    data = {"query": QUERY, "mode": "hybrid", "top_k": "3", "candidates": "10",
            "rerank": "features", "knowledge_base": "", **fields}
    return client.post("/workbench/lab/run", data, **(HTMX if htmx else {}))


class _Stages(HTMLParser):
    """stage -> {"ran": bool, "entries": [(chunk_id, rank, score or None)], "links": [...]}."""

    def __init__(self) -> None:
        super().__init__()
        self.stages: dict[str, dict] = {}
        self._current: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and "data-stage" in attrs:
            self._current = self.stages[attrs["data-stage"]] = {
                "ran": attrs["data-ran"] == "true", "entries": [], "links": []}
        elif tag == "li" and "data-chunk-id" in attrs and self._current is not None:
            score = attrs.get("data-score")
            self._current["entries"].append((int(attrs["data-chunk-id"]), int(attrs["data-rank"]),
                                             float(score) if score is not None else None))
        elif tag == "a" and self._current is not None:
            self._current["links"].append(attrs["href"])


def stages_of(response) -> dict[str, dict]:
    parser = _Stages()
    parser.feed(response.content.decode())
    return parser.stages


def explain_of(client, *, mode: str, top_k: int, candidates: int, rerank: str) -> dict:
    config = config_changed(get_config(), rag_candidates=candidates, rag_rerank=rerank)
    scope = caller_for_user(client.user).scope()
    return search(RetrievalRequest(query=QUERY, scope=scope, top_k=top_k, mode=mode, explain=True),
                  config=config).explain


def expected(explain: dict, rank_field: str, score_of) -> list[tuple[int, int, float | None]]:
    rows = [(item["chunk_id"], item[rank_field], score_of(item))
            for item in explain["results"] if item[rank_field] is not None]
    return sorted(rows, key=lambda row: row[1])


def test_the_lab_needs_a_sign_in(client, db):
    response = client.get("/workbench/lab/")
    assert response.status_code == 302 and response["Location"].startswith("/workbench/login/")


def test_the_lab_offers_only_the_rerankers_that_can_run(researcher, sample_index):
    html = researcher.get("/workbench/lab/").content.decode()
    assert '<option value="features"' in html and '<option value="none"' in html
    # No RERANK_BASE_URL, RERANK_MODEL or RERANK_API_KEY in the tests' configuration.
    assert '<option value="openai-compatible"' not in html
    assert 'hx-post="/workbench/lab/run"' in html and 'action="/workbench/lab/run"' in html


def test_hybrid_with_features_rerank_shows_the_four_stages_of_the_explain_output(
        researcher, sample_index):
    response = run(researcher)
    assert response.status_code == 200
    stages = stages_of(response)
    explain = explain_of(researcher, mode="hybrid", top_k=3, candidates=10, rerank="features")
    assert list(stages) == ["vector", "lexical", "fused", "rerank"]
    assert all(stage["ran"] for stage in stages.values())
    assert stages["vector"]["entries"] == expected(explain, "vector_rank",
                                                   lambda item: item["cosine"])
    assert stages["lexical"]["entries"] == expected(explain, "lexical_rank",
                                                    lambda item: item["bm25"])
    assert stages["fused"]["entries"] == expected(explain, "fused_rank",
                                                  lambda item: item["fused_score"])
    assert stages["rerank"]["entries"] == expected(explain, "rerank_rank",
                                                   lambda item: item["rerank_score"])
    assert [row[0] for row in stages["rerank"]["entries"]] == [
        item["chunk_id"] for item in explain["results"]]
    assert len(stages["rerank"]["entries"]) == 3
    assert stages["rerank"]["links"] == [f"/workbench/chunks/{chunk_id}/"
                                         for chunk_id, _, _ in stages["rerank"]["entries"]]


def test_the_run_shows_stage_times_parameters_confidence_and_what_a_list_holds(
        researcher, sample_index):
    html = run(researcher).content.decode()
    for stage in ("embed", "vector", "lexical", "fuse", "rerank"):
        assert f'data-stage-ms="{stage}"' in html
    assert '<td data-parameter="candidates">10</td>' in html
    assert '<td data-parameter="rerank">features</td>' in html
    assert '<td data-parameter="top_k">3</td>' in html
    assert 'class="lab-confidence"' in html
    # Each stage ranked up to 10 candidates, the explain output lists the final 3 only.
    assert "Shows" in html and "the only ones the explain output lists" in html
    assert "Support Escalation Policy" in html


def test_vector_mode_says_the_other_stages_did_not_run(researcher, sample_index):
    stages = stages_of(run(researcher, mode="vector"))
    assert stages["vector"]["ran"] and len(stages["vector"]["entries"]) == 3
    assert not any(stages[name]["ran"] for name in ("lexical", "fused"))
    assert all(not stages[name]["entries"] for name in ("lexical", "fused"))
    # Vector mode reranks nothing: no Reranked column, one line that says why.
    assert "rerank" not in stages
    html = run(researcher, mode="vector").content.decode()
    assert "Not run: vector mode does not search by BM25." in html
    assert "Not run: vector mode has a single channel and nothing to fuse." in html
    assert ('<p class="muted lab-rerank-off"><strong>Reranked</strong> · Not run: vector mode '
            'keeps the cosine order.</p>') in html


def test_rerank_none_leaves_out_the_empty_reranked_column_and_says_why(researcher, sample_index):
    response = run(researcher, rerank="none")
    stages = stages_of(response)
    assert list(stages) == ["vector", "lexical", "fused"] and stages["fused"]["ran"]
    html = response.content.decode()
    assert html.count('class="card lab-stage"') == 3
    assert ('<p class="muted lab-rerank-off"><strong>Reranked</strong> · Not run: the rerank '
            'provider is none, so the fused order stands.</p>') in html


def test_a_reranker_that_ran_keeps_its_column_and_no_off_line(researcher, sample_index):
    response = run(researcher, rerank="features")
    assert list(stages_of(response)) == ["vector", "lexical", "fused", "rerank"]
    assert "lab-rerank-off" not in response.content.decode()


def test_a_results_path_may_wrap_after_each_separator(researcher, sample_index):
    html = run(researcher).content.decode()
    sources = re.findall(r'<a class="card-title" href="/workbench/chunks/\d+/">(.*?)</a>', html)
    assert sources and all("/<wbr>" in source for source in sources)
    assert "policies/<wbr>Support Escalation Policy.md" in sources


@pytest.mark.parametrize("candidates", ["0", "501"])
def test_invalid_candidates_are_refused_with_a_message_and_nothing_runs(researcher, sample_index,
                                                                        candidates):
    response = run(researcher, candidates=candidates)
    html = response.content.decode()
    assert response.status_code == 422
    assert "Nothing was run" in html and f"RAG_CANDIDATES={candidates} is outside 1..500" in html
    assert "data-stage=" not in html
    trace = Trace.objects.get(id=response["X-Request-ID"])
    assert trace.status == "error" and trace.channel == "workbench"
    assert set(trace.timings_ms) == {"total"}  # not even the query was embedded


@pytest.mark.parametrize("fields, message", [
    ({"rerank": "openai-compatible"}, "cannot run with this configuration (config_missing)"),
    ({"rerank": "magic"}, "RAG_RERANK=&#x27;magic&#x27; is not supported"),
    ({"top_k": "21"}, "Ensure this value is less than or equal to 20"),
    ({"mode": "psychic"}, "Select a valid choice"),
    ({"knowledge_base": "beta"}, "Select a valid choice"),
    ({"query": ""}, "This field is required"),
])
def test_other_invalid_parameters_are_refused_too(researcher, sample_index, fields, message):
    response = run(researcher, **fields)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert "data-stage=" not in response.content.decode()


def test_a_lab_run_is_traced_with_channel_workbench_and_its_parameters(researcher, sample_index):
    response = run(researcher, mode="lexical", top_k="4", candidates="7", rerank="none",
                   knowledge_base="default")
    trace = Trace.objects.get(id=response["X-Request-ID"])
    assert (trace.operation, trace.channel, trace.status) == ("search", "workbench", "ok")
    assert trace.caller == "user researcher" and trace.user_id == researcher.user.pk
    assert trace.mode == "lexical" and trace.knowledge_base_ids == [kb_get("default").id]
    assert {key: trace.parameters[key] for key in ("mode", "top_k", "candidates", "rerank")} == {
        "mode": "lexical", "top_k": 4, "candidates": 7, "rerank": "none"}
    assert "lexical" in trace.timings_ms and "vector" not in trace.timings_ms


def test_without_htmx_the_whole_lab_page_comes_back(researcher, sample_index):
    response = run(researcher, htmx=False)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" in html and 'id="lab-form"' in html and 'data-stage="rerank"' in html
    assert "<script>" not in html and "style=" not in html


def test_with_htmx_only_the_results_fragment_comes_back(researcher, sample_index):
    html = run(researcher).content.decode()
    assert "<html" not in html and 'data-stage="vector"' in html


def test_a_search_that_fails_shows_its_error_code(person, sample_index):
    kb_create(slug="empty")  # nothing of its scope is embedded
    studies_empty = person("empty-researcher", grants={"empty": Grant.RESEARCHER})
    response = run(studies_empty, mode="vector")
    html = response.content.decode()
    assert response.status_code == 503
    assert "The search failed" in html and "<code>retrieval_not_ready</code>" in html
    assert "data-stage=" not in html


@pytest.mark.parametrize("grants", [{}, {"default": Grant.READER}])
def test_a_person_who_researches_no_base_is_refused_the_lab(person, sample_index, grants):
    client = person("no-researcher", grants=grants)
    assert client.get("/workbench/lab/").status_code == 403
    response = run(client)
    assert response.status_code == 403 and "data-stage=" not in response.content.decode()


def test_the_lab_searches_within_the_filters_and_refuses_a_bad_line(researcher, sample_index):
    from knowledge.models import Chunk

    response = run(researcher, folder="runbooks", format="markdown")
    assert response.status_code == 200
    entries = [chunk_id for stage in stages_of(response).values()
               for chunk_id, _rank, _score in stage["entries"]]
    paths = set(Chunk.objects.filter(id__in=entries).values_list("relative_path", flat=True))
    assert entries and paths and all(path.startswith("runbooks/") for path in paths)
    # The effective parameters say what the filter admitted.
    assert 'data-parameter="filters"' in response.content.decode()
    unfiltered = run(researcher)
    everywhere = {chunk_id for stage in stages_of(unfiltered).values()
                  for chunk_id, _rank, _score in stage["entries"]}
    assert not everywhere <= set(entries), "the question reaches past runbooks/ unfiltered"

    refused = run(researcher, conditions="year >= 2019\nregion Yunnan")
    html = refused.content.decode()
    assert refused.status_code == 422 and "Nothing was run" in html
    assert "The filters are not valid: line 2 is not" in html
    assert not stages_of(refused)
