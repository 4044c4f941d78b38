import pytest

PATHS_GET = [
    "/workbench/knowledge/default/?page=abc",
    "/workbench/knowledge/default/?page=99999999999999999999",
    "/workbench/knowledge/default/?page=-1",
    "/workbench/traces/?page=abc",
    "/workbench/traces/?page=999999999999999999999",
    "/workbench/traces/?operation=%00",
    "/workbench/traces/?status=x%00y",
    "/workbench/chunks/99999999999999999999/",
    "/workbench/chunks/99999999999999999999/?page=abc",
    "/workbench/documents/99999999999999999999/pages/1.png",
    "/workbench/documents/1/pages/99999999999999999999.png",
    "/workbench/jobs/99999999999999999999/",
    "/workbench/evaluation/?set=99999999999999999999",
    "/workbench/evaluation/?set=%C2%B2",
    "/workbench/evaluation/?set=abc",
    "/workbench/evaluation/sets/99999999999999999999/",
    "/workbench/evaluation/runs/99999999999999999999/",
    "/workbench/evaluation/runs/99999999999999999999/status",
    "/workbench/evaluation/compare/?run=%C2%B2&run=1",
    "/workbench/evaluation/compare/?run=99999999999999999999&run=1",
    "/workbench/evaluation/compare/?run=1",
    "/workbench/traces/00000000-0000-0000-0000-000000000000/",
    "/workbench/knowledge/%00/",
    "/workbench/knowledge/" + "a" * 500 + "/",
    "/workbench/ask/stream",
    "/workbench/login/?next=https://evil.example/",
    "/workbench/nope/",
]


@pytest.mark.parametrize("path", PATHS_GET)
def test_get(person, sample_index, path):
    client = person("admin", superuser=True)
    response = client.get(path)
    print("PROBE", path, response.status_code, response.get("Location"), response.get("Content-Type"))
    assert response.status_code < 500


PATHS_POST = [
    ("/workbench/documents/99999999999999999999/reindex/", {}),
    ("/workbench/documents/99999999999999999999/delete/", {}),
    ("/workbench/knowledge/default/upload/", {}),
    ("/workbench/knowledge/nope/upload/", {}),
    ("/workbench/ask/", {"question": "x", "top_k": "99999999999999999999"}),
    ("/workbench/ask/", {"question": "x\x00y"}),
    ("/workbench/ask/", {"question": ""}),
    ("/workbench/ask/stream", {"question": ""}),
    ("/workbench/ask/stream", {"question": "x\x00y"}),
    ("/workbench/lab/run", {"query": "x", "mode": "hybrid", "top_k": "5", "candidates": "99999999999999999999", "rerank": "none"}),
    ("/workbench/lab/run", {"query": "x", "mode": "hybrid", "top_k": "5", "candidates": "10", "rerank": "bogus"}),
    ("/workbench/lab/run", {"query": "x\x00", "mode": "hybrid", "top_k": "5", "candidates": "10", "rerank": "none"}),
    ("/workbench/evaluation/runs/launch", {"question_set": "99999999999999999999"}),
    ("/workbench/evaluation/runs/launch", {"question_set": "abc"}),
    ("/workbench/evaluation/sets/import", {"name": "n", "knowledge_base": "default", "text": "questions: [1]"}),
    ("/workbench/evaluation/sets/import", {"name": "n", "knowledge_base": "default", "text": "questions:\n - {id: a, question: q, expected_mode: rag, expected_pages: [x], expected_sources: [a.pdf]}"}),
    ("/workbench/evaluation/sets/import", {"name": "n", "knowledge_base": "default", "text": "questions:\n - {id: a, question: q, expected_mode: rag, kind: [1,2]}"}),
    ("/workbench/evaluation/sets/import", {"name": "n", "knowledge_base": "default", "text": "questions:\n - {id: [a], question: q, expected_mode: rag}"}),
    ("/workbench/evaluation/sets/import", {"name": "n", "knowledge_base": "default", "text": "questions:\n - {id: a, question: q, expected_mode: rag, expected_sources: [{a: 1}]}"}),
    ("/workbench/evaluation/sets/import", {"name": "n", "knowledge_base": "default", "text": "!!python/object:os.system x"}),
    ("/workbench/feedback/", {"trace_id": "x", "rating": "up"}),
    ("/workbench/feedback/", {"trace_id": "x\x00", "rating": "up"}),
]


@pytest.mark.parametrize("path,data", PATHS_POST)
def test_post(person, sample_index, path, data):
    client = person("admin", superuser=True)
    response = client.post(path, data)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    print("PROBE", path, data, response.status_code, response.get("Location"), body[:300])
    assert response.status_code < 500
