"""Lexical (BM25) search benchmark: p50/p95 of `lexical_search` over a synthetic corpus.

Runs against DATABASE_URL (start it with `rag pg start && rag db init`). Writes N synthetic
chunks of mixed Chinese/English prose with identifiers (ERR-1042, v2.3.1, inc-2024-031,
snake_case.names()) under a scratch vault through the ingest's own write path (fake-lexical-v1
vectors, lexical terms built by parsing/lexical.py), then measures a few query shapes and prints
one JSON line per shape. The scratch vault is removed afterwards unless --keep is given.

    .venv/bin/python bench/lexical.py --chunks 20000
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import time

from _setup import django_setup, vacuum

VAULT = "/bench/lexical"
NOTES_PER_BATCH = 100
CHUNKS_PER_NOTE = 10
EN_WORDS = ("latency deploy customer export policy incident escalation runbook database replica "
            "quota token invoice contract pipeline cluster failover alert dashboard region "
            "backup restore retention audit schema migration index throughput release the and "
            "of to for with limit timeout error retry webhook tenant billing atlas crm").split()
ZH_WORDS = ("客户 工单 升级 导出 限制 延迟 告警 数据 合同 审计 备份 恢复 发布 集群 索引 性能 值班 "
            "流程 配额 每日 错误 超时 重试 租户 账单 接口 权限 日志 监控 迁移").split()
# Query shapes: what a user types, from a rare identifier to a long question.
QUERIES = {
    "identifier_exact": "ERR-1042",
    "identifier_version": "v2.3.1 release",
    "identifier_split_differently": "retry_policy",
    "zh_question": "客户数据导出限制是多少？",
    "zh_two_chars": "导出",
    "en_question": "how do I restore a database backup after failover",
    "mixed": "Atlas CRM 的导出限制 ERR-1042",
    "three_words": "customer invoice export",
}
SEED = 13


def vocabulary(rng: random.Random) -> tuple[list[str], list[float], list[str], list[float]]:
    """English and Chinese words with Zipf-like cumulative weights. Generated words fill the
    ranks (the first few act as stop words, in most chunks); the named words, which the queries
    use, sit every 25th rank from the 4th on, so they range from common to rare."""
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]

    def spread(named: list[str], generated: list[str]) -> list[str]:
        words = list(generated)
        for index, word in enumerate(named):
            words.insert(3 + 25 * index, word)
        return words

    english = spread(EN_WORDS, ["".join(rng.choices(syllables, k=rng.randint(2, 4)))
                                for _ in range(4000)])
    chinese = spread(ZH_WORDS, ["".join(chr(0x4E00 + rng.randrange(2500)) for _ in range(2))
                                for _ in range(3000)])

    def cumulative(words: list[str]) -> list[float]:
        return list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(len(words))))

    return english, cumulative(english), chinese, cumulative(chinese)


def identifier(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return f"ERR-{rng.randrange(1000, 1400)}"
    if kind == 1:
        return f"v{rng.randrange(1, 4)}.{rng.randrange(10)}.{rng.randrange(10)}"
    if kind == 2:
        return f"inc-2024-{rng.randrange(1000):03d}"
    return f"{rng.choice(EN_WORDS)}_{rng.choice(EN_WORDS)}.{rng.choice(EN_WORDS)}()"


def chunk_text(rng: random.Random, words: tuple) -> str:
    """About 300-700 terms, like a real 400-800 token chunk: English and Chinese sentences of
    Zipf-distributed words, and identifiers."""
    english, english_weights, chinese, chinese_weights = words
    parts = []
    for _ in range(rng.randint(20, 45)):
        roll = rng.random()
        if roll < 0.45:
            sentence = rng.choices(english, cum_weights=english_weights, k=rng.randint(6, 16))
            parts.append(" ".join(sentence).capitalize() + ".")
        elif roll < 0.9:
            sentence = rng.choices(chinese, cum_weights=chinese_weights, k=rng.randint(4, 10))
            parts.append("".join(sentence) + "。")
        else:
            parts.append(f"See {identifier(rng)} ({identifier(rng)}).")
    return " ".join(parts)


def seed(chunks: int, rng: random.Random) -> None:
    """Store `chunks` synthetic chunks (10 per note) with vectors and lexical terms."""
    from embeddings import FakeLexicalEmbedder
    from knowledge.preparing import chunk_texts
    from knowledge.store import DocumentVersion, documents_write
    from parsing.chunking import ChunkDraft

    embedder = FakeLexicalEmbedder()
    words = vocabulary(rng)
    notes = chunks // CHUNKS_PER_NOTE
    for start in range(0, notes, NOTES_PER_BATCH):
        versions = []
        for index in range(start, min(notes, start + NOTES_PER_BATCH)):
            drafts = [ChunkDraft(chunk_index=position, content=chunk_text(rng, words),
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
        documents_write(vault_path=VAULT, versions=versions, vectors=vectors, embedder=embedder)


def measure(query: str, requests: int, limit: int) -> dict[str, float]:
    from access.callers import scope_all
    from retrieval.lexical import lexical_search

    # warm-up, and the result size
    hits = lexical_search(knowledge_base_ids=scope_all().knowledge_base_ids, query=query,
                          limit=limit)
    samples = []
    for _ in range(requests):
        started = time.perf_counter()
        lexical_search(knowledge_base_ids=scope_all().knowledge_base_ids, query=query, limit=limit)
        samples.append(time.perf_counter() - started)
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
            "requests": requests, "hits": len(hits),
            "top_score": round(hits[0].score, 4) if hits else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--limit", type=int, default=50,
                        help="chunks per search (RAG_CANDIDATES, the hybrid channel size)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch vault afterwards")
    parser.add_argument("--reuse", action="store_true", help="measure a vault kept by --keep")
    args = parser.parse_args()
    django_setup()
    from knowledge.store import documents_delete

    notes = args.chunks // CHUNKS_PER_NOTE
    try:
        if not args.reuse:
            vacuum()
            started = time.perf_counter()
            seed(args.chunks, random.Random(SEED))
            seeded = round(time.perf_counter() - started, 1)
            vacuum()
            print(json.dumps({"chunks": args.chunks, "measurement": "seed",
                              "seconds": seeded}), flush=True)
        # The three most frequent words of the corpus (in most chunks): every term is dropped.
        queries = {**QUERIES, "stop_words": " ".join(vocabulary(random.Random(SEED))[0][:3])}
        for shape, query in queries.items():
            print(json.dumps({"chunks": args.chunks, "measurement": shape, "query": query,
                              **measure(query, args.requests, args.limit)},
                             ensure_ascii=False), flush=True)
    finally:
        if not args.keep:
            documents_delete(vault_path=VAULT,
                             relative_paths=[f"n{index:06d}.md" for index in range(notes)])
            vacuum()


if __name__ == "__main__":
    main()
