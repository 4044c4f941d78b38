"""GET /documents/{id}/content: a document's text as the index holds it, its chunks in order
without their overlaps, a marker before each page, cut at `max_chars` with `truncated`."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from core.config import get_config
from knowledge.document_text import CONTENT_MAX_CHARS
from knowledge.ingest import IngestRequest, vault_ingest
from tests.api.http import error_of
from tests.conftest import PAGED_SOURCE

SENTENCE = "Drill hole {n} at Ridge 9 met the wolframite vein at {n}0 metres depth."


def chunks_of(document_id: int) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT content FROM chunks WHERE document_id = %s ORDER BY chunk_index",
                       [document_id])
        return [row[0] for row in cursor.fetchall()]


def document_id_of(relative_path: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM documents WHERE relative_path = %s", [relative_path])
        return cursor.fetchone()[0]


def content(client, document_id: int, query: str = "") -> dict:
    response = client.get(f"/documents/{document_id}/content{query}")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def test_a_long_note_reads_as_written_without_the_chunk_overlaps(client, db, tmp_path):
    body = " ".join(SENTENCE.format(n=n) for n in range(300))
    (tmp_path / "ridge.md").write_text(f"---\ntags: [survey]\n---\n# Ridge 9\n\n{body}\n",
                                       encoding="utf-8")
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())
    document_id = document_id_of("ridge.md")
    chunks = chunks_of(document_id)
    assert len(chunks) > 2, "the note is long enough for continuation chunks"
    text = content(client, document_id)
    assert text["content"] == f"# Ridge 9\n\n{body}"  # the frontmatter is not indexed text
    assert len(text["content"]) < sum(len(chunk) for chunk in chunks)
    assert (text["document_id"], text["knowledge_base"], text["format"], text["status"],
            text["chunks"], text["truncated"], text["max_chars"]) == (
        document_id, "default", "markdown", "active", len(chunks), False, CONTENT_MAX_CHARS)
    # Every chunk (what search results quote) is in it as it is.
    assert all(chunk in text["content"] for chunk in chunks)


def test_a_paged_document_has_a_marker_before_each_page(client, paged_index):
    text = content(client, document_id_of(PAGED_SOURCE))["content"]
    assert text.startswith("--- page 3 ---\n\n")
    assert text.count("--- pages 3–4 ---") == 1 and "--- page 4 ---" not in text


def test_max_chars_cuts_the_text_and_says_so(client, sample_index):
    document_id = document_id_of(PAGED_SOURCE)
    whole = content(client, document_id)["content"]
    cut = content(client, document_id, "?max_chars=40")
    assert cut["content"] == whole[:40] and cut["truncated"] is True and cut["max_chars"] == 40
    assert content(client, document_id, f"?max_chars={len(whole)}")["truncated"] is False


def test_max_chars_out_of_bounds_is_422(client, sample_index):
    for value in (0, CONTENT_MAX_CHARS + 1, "all"):
        response = client.get(f"/documents/{document_id_of(PAGED_SOURCE)}/content"
                              f"?max_chars={value}")
        assert response.status_code == 422 and error_of(response)["code"] == "invalid_request"


def test_a_document_without_chunks_yet_has_no_text(client, sample_index, config_override,
                                                   tmp_path):
    config_override(project_root=tmp_path)
    uploaded = client.post("/knowledge-bases/default/documents",
                           {"file": SimpleUploadedFile("ridge.txt", b"Ridge 9 notes.")})
    text = content(client, json.loads(uploaded.content)["document_id"])
    assert (text["status"], text["chunks"], text["content"], text["truncated"]) == (
        "queued", 0, "", False)


def test_a_missing_document_is_404(client, sample_index):
    response = client.get("/documents/999999/content")
    assert response.status_code == 404
    assert error_of(response)["details"] == {"id": 999999}
