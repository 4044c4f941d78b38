"""Search benchmark: /search latency p50/p95 over N synthetic chunks, in-process and over HTTP.

Runs against DATABASE_URL (start it with `rag pg start && rag db init`). For each N it adds N
synthetic chunks with fake-lexical-v1 vectors under a scratch vault, measures the service call
in-process and POST /search through `rag serve` (gunicorn) at concurrency 1 and 8, prints one
JSON line per measurement, and removes the scratch vault again.

    .venv/bin/python bench/search.py --chunks 10000 100000
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from _setup import django_setup, server_start, vacuum

from retrieval.types import RetrievalRequest

WORDS = ("latency deploy customer export policy incident escalation runbook database replica "
         "quota token invoice contract pipeline cluster failover alert dashboard region backup "
         "restore retention audit schema migration index throughput release 客户 工单 升级 导出 "
         "限制 延迟 告警 数据 合同 审计 备份 恢复 发布 集群 索引 性能 值班 流程").split()
QUERIES = ["客户 P1 工单应该怎么升级？", "Atlas CRM export limits", "API latency on-call steps",
           "哪些客户数据不能发送给外部模型？", "claims sales must avoid against competitors",
           "postgres replica failover runbook", "导出配额 每日 限制",
           "incident escalation timeline"]
NOTES_PER_BATCH = 100
CHUNKS_PER_NOTE = 10


def seed(vault: str, chunks: int, rng: random.Random) -> None:
    """Store `chunks` synthetic chunks (10 per note) with their fake-lexical vectors."""
    from embeddings import FakeLexicalEmbedder
    from knowledge.preparing import chunk_texts
    from knowledge.store import DocumentVersion, documents_write
    from parsing.chunking import ChunkDraft

    embedder = FakeLexicalEmbedder()
    notes = chunks // CHUNKS_PER_NOTE
    for start in range(0, notes, NOTES_PER_BATCH):
        versions = []
        for index in range(start, min(notes, start + NOTES_PER_BATCH)):
            drafts = [ChunkDraft(chunk_index=position,
                                 content=" ".join(rng.choices(WORDS, k=rng.randint(60, 200))),
                                 heading_path=[f"Note {index}", f"Part {position}"],
                                 token_count=0, content_hash=f"{index}-{position}", wikilinks=[],
                                 wikilink_aliases={})
                      for position in range(CHUNKS_PER_NOTE)]
            versions.append(DocumentVersion(
                relative_path=f"n{index:06d}.md", file_path=f"/bench/{index}",
                content_hash=str(index), mtime_ns=0, size_bytes=0, frontmatter={}, tags=["bench"],
                chunks=drafts))
        vectors = embedder.embed_documents([text for version in versions for text in chunk_texts(
            chunks=version.chunks, relative_path=version.relative_path, tags=version.tags)])
        documents_write(vault_path=vault, versions=versions, vectors=vectors, embedder=embedder)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
            "requests": len(ordered)}


def in_process(requests: int) -> dict[str, float]:
    from access.callers import scope_all
    from core.config import get_config
    from retrieval.services import search

    config = get_config()
    samples = []
    for number in range(requests):
        started = time.perf_counter()
        search(RetrievalRequest(query=QUERIES[number % len(QUERIES)], scope=scope_all(), top_k=5),
               config=config)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def over_http(url: str, requests: int, concurrency: int) -> dict[str, float]:
    import httpx

    # One shared client: building a client per request costs tens of milliseconds (TLS
    # context set-up) that would be measured as server latency.
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(base_url=url, timeout=120, limits=limits) as client:
        client.post("/search", json={"query": QUERIES[0]}).raise_for_status()  # warm-up

        def one(number: int) -> float:
            started = time.perf_counter()
            response = client.post("/search", json={"query": QUERIES[number % len(QUERIES)]})
            response.raise_for_status()
            return time.perf_counter() - started

        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            return percentiles(list(pool.map(one, range(requests))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--requests", type=int, default=80)
    args = parser.parse_args()
    django_setup()
    from knowledge.store import documents_delete

    vacuum()
    rng = random.Random(11)
    process, url = server_start()
    try:
        for chunks in args.chunks:
            vault = f"/bench/search-{chunks}"
            started = time.perf_counter()
            seed(vault, chunks, rng)
            vacuum()
            seeded = round(time.perf_counter() - started, 1)
            try:
                base = {"chunks": chunks, "seed_seconds": seeded}
                print(json.dumps({**base, "measurement": "in_process",
                                  **in_process(args.requests)}), flush=True)
                for concurrency in (1, 8):
                    print(json.dumps({**base, "measurement": f"http_concurrency_{concurrency}",
                                      **over_http(url, args.requests, concurrency)}), flush=True)
            finally:
                documents_delete(vault_path=vault, relative_paths=[
                    f"n{index:06d}.md" for index in range(chunks // CHUNKS_PER_NOTE)])
                vacuum()
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
