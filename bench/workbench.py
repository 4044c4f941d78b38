"""Workbench benchmark: how long each page takes to answer in-process (Django's test client,
no network), on copies of samples/acme-vault and samples/geo-kb indexed in DATABASE_URL with
the configured embedder and LLM (fake ones by default).

Prints one JSON line per measurement, the median (and p95) of --repeat runs in milliseconds:
  ask_page          GET /workbench/ask/
  ask               POST /workbench/ask/ (the whole answer, rendered)
  ask_stream        POST /workbench/ask/stream: first event and whole stream
  source            GET a PDF chunk's source view (page text read from the PDF)
  page_image        GET a PDF page as PNG (110 dpi), with its size in bytes
  lab               POST /workbench/lab/run, hybrid + features rerank
  eval_run          one evaluation run of eval/questions.yaml through the job worker (seconds)

Everything it adds (the copies, a temporary superuser, its question set) is removed at the end.

    .venv/bin/rag pg start && .venv/bin/rag db init && .venv/bin/python bench/workbench.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _setup import ROOT, django_setup, vacuum

QUESTION = "客户 P1 工单应该怎么升级？"
LAB = {"query": "ZK-0805 钻孔 Mo 品位", "mode": "hybrid", "top_k": "5", "candidates": "50",
       "rerank": "features"}


def timed(repeat: int, request) -> dict:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = request()
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    samples.sort()
    return {"median_ms": round(statistics.median(samples), 2),
            "p95_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.95))], 2),
            "runs": repeat}


def stream_times(client, repeat: int) -> dict:
    first, whole = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.post("/workbench/ask/stream", {"question": QUESTION})
        content = iter(response.streaming_content)
        next(content)
        first.append((time.perf_counter() - started) * 1000)
        for _ in content:
            pass
        whole.append((time.perf_counter() - started) * 1000)
    return {"first_event_median_ms": round(statistics.median(first), 2),
            "whole_median_ms": round(statistics.median(whole), 2), "runs": repeat}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    django_setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from access.callers import caller_for_user
    from core.config import get_config
    from evaluation.models import QuestionSet
    from evaluation.runs import question_set_import, run_launch
    from jobs.worker import Worker
    from knowledge.ingest import IngestRequest, vault_ingest
    from knowledge.models import Chunk
    from knowledge.vault_index import vault_forget

    work = Path(tempfile.mkdtemp(prefix="local-rag-bench-workbench-"))
    users = get_user_model().objects
    user = users.create_superuser(username=f"bench-{work.name}", password=None)
    folders = []
    try:
        for name in ("acme-vault", "geo-kb"):
            folder = work / name
            shutil.copytree(ROOT / "samples" / name, folder)
            vault_ingest(IngestRequest(vault_path=folder), config=get_config())
            folders.append(folder)
        vacuum()
        client = Client(SERVER_NAME="localhost", raise_request_exception=True)
        client.force_login(user)
        chunk = (Chunk.objects.filter(document__format="pdf", page_start__isnull=False,
                                      document__vault_path=str(folders[1].resolve()))
                 .order_by("document_id", "chunk_index").first())
        repeat = args.repeat
        print(json.dumps({"measurement": "ask_page",
                          **timed(repeat, lambda: client.get("/workbench/ask/"))}), flush=True)
        print(json.dumps({"measurement": "ask", **timed(repeat, lambda: client.post(
            "/workbench/ask/", {"question": QUESTION}))}), flush=True)
        print(json.dumps({"measurement": "ask_stream", **stream_times(client, repeat)}),
              flush=True)
        print(json.dumps({"measurement": "source", **timed(
            repeat, lambda: client.get(f"/workbench/chunks/{chunk.pk}/"))}), flush=True)
        image_url = f"/workbench/documents/{chunk.document_id}/pages/{chunk.page_start}.png"
        size = len(client.get(image_url).content)
        print(json.dumps({"measurement": "page_image", "bytes": size,
                          **timed(repeat, lambda: client.get(image_url))}), flush=True)
        print(json.dumps({"measurement": "lab", **timed(
            repeat, lambda: client.post("/workbench/lab/run", LAB))}), flush=True)
        caller = caller_for_user(user)
        question_set = question_set_import(
            caller=caller, slug="default", name=f"bench {work.name}",
            text=(ROOT / "eval" / "questions.yaml").read_text(encoding="utf-8"))
        run = run_launch(caller=caller, set_id=question_set.pk, top_k=5)
        started = time.perf_counter()
        Worker(poll_seconds=0.05).run(until_idle=True)
        run.refresh_from_db()
        print(json.dumps({"measurement": "eval_run", "status": run.status,
                          "questions": len(question_set.questions),
                          "seconds": round(time.perf_counter() - started, 3),
                          "latency_p50_ms": run.summary.get("latency_p50_ms"),
                          "latency_p95_ms": run.summary.get("latency_p95_ms")}), flush=True)
    finally:
        QuestionSet.objects.filter(name=f"bench {work.name}").delete()
        user.delete()
        for folder in folders:
            vault_forget(vault_path=folder)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
