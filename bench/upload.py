"""Upload-to-searchable benchmark: `rag serve` (with its in-process job worker) on loopback, a
generated 20-page PDF uploaded through the API, and the time until its job succeeded and a
search finds it. Prints one JSON line per run.

Runs against DATABASE_URL (`rag pg start && rag db init` first). Needs fpdf2 (`make test`
installs it). The knowledge base and its documents are removed afterwards.

    .venv/bin/python bench/upload.py --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
import uuid

from _setup import django_setup, server_start

PAGES = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    django_setup()
    import httpx

    from bench.documents import digital_pdf
    from knowledge.bases import kb_create

    slug = f"bench-{uuid.uuid4().hex[:8]}"
    kb_create(slug=slug, name="upload benchmark")
    process, url = server_start(env={**os.environ})
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            for run in range(args.runs):
                pdf = digital_pdf(PAGES, seed=100 + run)
                marker = f"benchmarker{run}x{uuid.uuid4().hex[:6]}"
                started = time.perf_counter()
                response = client.post(f"/knowledge-bases/{slug}/documents",
                                       files={"file": (f"report-{run}.pdf", pdf + b"\n%" +
                                                       marker.encode(), "application/pdf")})
                accepted = time.perf_counter() - started
                body = response.json()
                while True:
                    job = client.get(f"/jobs/{body['job_id']}").json()
                    if job["status"] in ("succeeded", "failed", "cancelled"):
                        break
                    time.sleep(0.05)
                done = time.perf_counter() - started
                found = client.post("/search", json={"query": "porphyry chalcopyrite",
                                                     "knowledge_bases": [slug], "top_k": 20})
                hit = any(result["document_id"] == body["document_id"]
                          for result in found.json()["results"])
                print(json.dumps({"measurement": "upload_to_searchable", "pages": PAGES,
                                  "bytes": len(pdf), "status": job["status"],
                                  "accepted_seconds": round(accepted, 3),
                                  "searchable_seconds": round(done, 3), "found": hit,
                                  "chunks": job["result"].get("chunks")}), flush=True)
    finally:
        process.terminate()
        process.wait(timeout=30)
        _remove(slug)


def _remove(slug: str) -> None:
    """The benchmark's documents, its upload area and its knowledge base."""
    from django.db import connection

    from knowledge.bases import kb_get
    from knowledge.vault_index import vault_forget

    base = kb_get(slug)
    for source in base.sources:
        vault_forget(vault_path=source.path)
        shutil.rmtree(source.path, ignore_errors=True)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM knowledge_base_sources WHERE knowledge_base_id = %s",
                       [base.id])
        cursor.execute("DELETE FROM knowledge_bases WHERE id = %s", [base.id])


if __name__ == "__main__":
    main()
