"""The index while a server answers: a folder deleted under it (searches fall back, then its
background thread rebuilds it), and searches during an ingest that replaces chunks (never one
deleted before the search began)."""

from __future__ import annotations

import random
import shutil
import threading
import time

import httpx
import pytest
from django.db import connection

from core.config import get_config
from knowledge.ingest import IngestRequest, vault_ingest
from tests.commands.test_serve import serve  # noqa: F401
from tests.index.helpers import base_folder, vault_write

pytestmark = pytest.mark.usefixtures("clean_tables")


def default_base() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM knowledge_bases WHERE slug = 'default'")
        return cursor.fetchone()[0]


def search_index_used(server, query: str) -> dict:
    response = httpx.post(f"{server.url}/search",
                          json={"query": query, "explain": True, "top_k": 5}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["explain"]["parameters"]["search_index"]


def rare_word(folder) -> str:
    """The rarest word of the first note's body: in few chunks, so never a dropped term."""
    body = (folder / "note-0.md").read_text(encoding="utf-8").split("\n\n")[2].split()
    text = " ".join(path.read_text(encoding="utf-8") for path in folder.glob("*.md"))
    return min(body, key=text.count)


def test_a_deleted_index_folder_is_rebuilt_while_serving(serve, tmp_path):  # noqa: F811
    folder = vault_write(tmp_path / "vault", random.Random(61), notes=30)
    vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
    query = rare_word(folder)
    server = serve()
    assert search_index_used(server, query)["lexical"]["path"] == "index"
    shutil.rmtree(base_folder(default_base()))
    assert search_index_used(server, query)["lexical"] == {
        "path": "sql", "reason": "missing", "knowledge_base_id": default_base()}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        used = search_index_used(server, query)
        if used["lexical"]["path"] == "index" and used["vector"]["path"] == "index":
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"not rebuilt in 30 s: {used}\n{server.output()[-2000:]}")


def test_searches_during_an_ingest_never_return_a_chunk_deleted_before_they_began(
        serve, tmp_path):  # noqa: F811
    rng = random.Random(62)
    folder = vault_write(tmp_path / "vault", rng, notes=40)
    vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
    words = (folder / "note-0.md").read_text(encoding="utf-8").split()[-30:]
    server = serve()
    deleted_at: dict[int, float] = {}  # chunk id -> when its delete was known committed
    stop = threading.Event()
    returned: list[tuple[float, list[int]]] = []
    errors: list[str] = []

    def search_loop() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            while not stop.is_set():
                began = time.monotonic()
                response = client.post("/search", json={"query": "round ba ke mi " + " ".join(
                    rng.sample(words, 2)), "top_k": 20, "explain": True})
                if response.status_code != 200:
                    errors.append(response.text)
                    continue
                returned.append((began, [hit["chunk_id"] for hit in
                                         response.json()["explain"]["results"]]))

    def existing() -> set[int]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM chunks")
            return {row[0] for row in cursor.fetchall()}

    searcher = threading.Thread(target=search_loop)
    searcher.start()
    try:
        before = existing()
        for round_number in range(4):
            for path in rng.sample(sorted(folder.glob("*.md")), 10):  # rewritten: new chunks
                path.write_text(f"# Note {round_number}\n\nnote {path.stem} round "
                                f"{round_number} ba ke mi\n", encoding="utf-8")
            searched = len(returned)
            vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
            now = existing()
            committed = time.monotonic()
            for chunk_id in before - now:
                deleted_at.setdefault(chunk_id, committed)
            before = now
            deadline = time.monotonic() + 30  # searches ran between this ingest and the next
            while len(returned) < searched + 5 and time.monotonic() < deadline and not errors:
                time.sleep(0.05)
    finally:
        stop.set()
        searcher.join(timeout=60)
    assert not errors
    assert len(returned) > 10 and deleted_at
    for began, chunk_ids in returned:
        stale = [chunk_id for chunk_id in chunk_ids
                 if chunk_id in deleted_at and deleted_at[chunk_id] < began]
        assert not stale, (began, stale)
