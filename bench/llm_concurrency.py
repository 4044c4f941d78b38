"""LLM concurrency benchmark: a slow upstream must not freeze the server.

Runs against DATABASE_URL (start it with `rag pg start && rag db init`). Ingests the sample vault
(with the configured embedder), starts a local stub OpenAI-compatible server that answers each
request in --answer-seconds (`--upstream hang`: silence, then the answer; `--upstream drip`: the
answer one byte at a time, which no per-read timeout stops), and `rag serve` (gunicorn, 2 workers
x 8 threads) pointed at it with LLM_TIMEOUT_SECONDS=--deadline. Then it sends --asks concurrent
POST /ask while polling GET /health every 50 ms (a new connection each time), and prints JSON
lines: /health latency before and during the burst (p50/p95/max ms; the goal is under 200 ms),
one line per /ask (status, error code, end time and
its distance from the deadline) and a summary of the /ask outcomes.

    .venv/bin/python bench/llm_concurrency.py --asks 16 --answer-seconds 5 --deadline 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from _setup import ROOT, server_start

sys.path.insert(0, str(ROOT))

from tests.answering.stub_openai import StubOpenAI

QUESTION = "客户 P1 工单应该怎么升级？"
HEALTH_INTERVAL_SECONDS = 0.05


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], check=False, cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def latency(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1), "requests": len(ordered)}


def poll_health(url: str, stop: threading.Event) -> list[float]:
    import httpx

    samples = []
    # A new connection each time, like a load balancer's probe: it may land on either worker.
    with httpx.Client(base_url=url, timeout=30, headers={"Connection": "close"}) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.get("/health").raise_for_status()
            samples.append(time.perf_counter() - started)
            stop.wait(HEALTH_INTERVAL_SECONDS)
    return samples


def one_ask(url: str, started: float) -> dict[str, object]:
    import httpx

    response = httpx.post(f"{url}/ask", json={"question": QUESTION}, timeout=120)
    ended = time.monotonic() - started
    body = response.json()
    code = body["error"]["code"] if "error" in body else body.get("mode")
    return {"status": response.status_code, "code": code, "ended_s": round(ended, 2),
            "retry_after": response.headers.get("retry-after")}


def burst(url: str, asks: int, deadline: float) -> None:
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=asks + 1) as pool:
        health = pool.submit(poll_health, url, stop)
        time.sleep(0.5)  # some quiet samples first
        started = time.monotonic()
        results = list(pool.map(lambda _: one_ask(url, started), range(asks)))
        stop.set()
        samples = health.result()
    print(json.dumps({"measurement": "health_during_burst", **latency(samples)}), flush=True)
    for index, result in enumerate(sorted(results, key=lambda item: item["ended_s"])):
        print(json.dumps({"measurement": "ask", "index": index, **result,
                          "minus_deadline_s": round(result["ended_s"] - deadline, 2)}),
              flush=True)
    codes = Counter(f"{result['status']} {result['code']}" for result in results)
    ends = [result["ended_s"] for result in results]
    print(json.dumps({"measurement": "ask_summary", "asks": asks, "deadline_s": deadline,
                      "outcomes": dict(codes), "last_end_s": max(ends),
                      "last_end_minus_deadline_s": round(max(ends) - deadline, 2)}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--asks", type=int, default=16)
    parser.add_argument("--answer-seconds", type=float, default=5.0)
    parser.add_argument("--deadline", type=float, default=3.0)
    parser.add_argument("--upstream", choices=("hang", "drip"), default="hang")
    args = parser.parse_args()
    env = dict(os.environ)
    ingest = manage("ingest", "samples/acme-vault", env=env)
    if ingest.returncode != 0:
        raise SystemExit(f"ingest failed: {ingest.stderr.strip()}")
    stub = StubOpenAI(behaviour=args.upstream, hang_seconds=args.answer_seconds)
    # The JSON body of the default answer is about 170 bytes.
    stub.drip_seconds = args.answer_seconds / 170
    with stub:
        env.update(LLM_PROVIDER="openai-compatible", LLM_BASE_URL=stub.base_url,
                   LLM_MODEL="bench-model", LLM_API_KEY="bench-key",
                   LLM_TIMEOUT_SECONDS=str(args.deadline))
        process, url = server_start(env=env)
        try:
            stop = threading.Event()
            threading.Timer(2.0, stop.set).start()
            print(json.dumps({"measurement": "health_idle", **latency(poll_health(url, stop))}),
                  flush=True)
            burst(url, args.asks, args.deadline)
            print(json.dumps({"measurement": "upstream", "behaviour": args.upstream,
                              "answer_seconds": args.answer_seconds,
                              "requests_received": len(stub.requests)}), flush=True)
        finally:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
