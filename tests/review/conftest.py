"""Shared fixtures of the review queue's tests: a `field` base holding a vault folder with a
scanned page of known text and a PDF with a ruled table, ingested with the fake embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client

from jobs.worker import Worker
from knowledge.ingest import IngestRequest, vault_ingest
from parsing.formats import ocr
from tests.knowledge.test_ingest import write
from tests.parsing.formats.files import ruled_table_pdf_bytes, scanned_pdf_bytes

needs_ocr = pytest.mark.skipif(not ocr.ocr_available(),
                               reason=f"the OCR extra is not installed ({ocr.INSTALL_HINT})")

SCAN_LINES = ["Hole ZK-7731 core log", "Quartz vein at 42 m"]
TABLE_ROWS = [["Sample", "Mass", "Length"], ["S-1", "12 kg", "3.5 mm"], ["S-2", "220 V", "45%"]]
# A word only on the table's page: what exclusion must take out of search.
TABLE_MARKER = "Tellurobismuthite"


def table_pdf() -> bytes:
    return ruled_table_pdf_bytes(TABLE_ROWS, before=f"{TABLE_MARKER} weighing log of the lab.",
                                 after="Checked by the lab manager.")


def ingest(root: Path, config) -> object:
    return vault_ingest(IngestRequest(vault_path=root, prepare_workers=0, knowledge_base="field"),
                        config=config)


def rows(query: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


def work() -> None:
    """Run every due job to its end, as `rag worker` would."""
    Worker(poll_seconds=0.01).run(until_idle=True)


def search(client: Client, query: str, **headers) -> list[dict]:
    response = client.post("/search", json.dumps({"query": query, "knowledge_bases": ["field"]}),
                           content_type="application/json", **headers)
    body = json.loads(response.content)
    if response.status_code == 503 and body["error"]["code"] == "retrieval_not_ready":
        return []
    assert response.status_code == 200, body
    return body["results"]


@pytest.fixture
def client() -> Client:
    return Client(raise_request_exception=False)


@pytest.fixture
def review_vault(tmp_path: Path, config_override):
    """The vault (table.pdf only) in base `field`, ingested; returns (root, config)."""
    from knowledge.bases import kb_create

    kb_create(slug="field", name="Field reports")
    config = config_override(rag_ocr_review_confidence=0.8)
    root = tmp_path / "vault"
    write(root, "table.pdf", table_pdf())
    ingest(root, config)
    return root, config


@pytest.fixture
def scan_vault(tmp_path: Path, config_override):
    """A scanned page of known text in base `field`, reviewed below confidence 1.0 (every OCR
    page); returns (root, config)."""
    from knowledge.bases import kb_create

    kb_create(slug="field", name="Field reports")
    config = config_override(rag_ocr_review_confidence=1.0)
    root = tmp_path / "vault"
    write(root, "scan.pdf", scanned_pdf_bytes([SCAN_LINES]))
    ingest(root, config)
    return root, config
