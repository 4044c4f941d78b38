"""Ingest through 1, 2 and 4 OpenAI-compatible embedding servers that each take a fixed time
per batch (local stubs, one batch at a time each, like one accelerator): whether the client
keeps every server busy.

A synthetic vault (bench/ingest.py's notes) is ingested cold once per server count, into
DATABASE_URL (start it with `rag pg start && rag db init`); its documents are removed after
each run. Each stub runs in a process of its own, as a real server would (its JSON work then
does not share this process's interpreter). Prints one JSON line per server count: seconds,
chunks/s, each server's busy share (requests × the batch time / wall time) and requests.

    .venv/bin/python bench/embedding_servers.py --notes 1000 --batch-ms 40
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _setup import ROOT, django_setup, vacuum
from ingest import generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--batch-ms", type=float, default=40.0,
                        help="each server's fixed time per batch of EMBEDDING_REMOTE_BATCH_SIZE")
    parser.add_argument("--concurrency", type=int, default=2,
                        help="EMBEDDING_MAX_CONCURRENCY (requests in flight per server)")
    args = parser.parse_args()
    django_setup()
    sys.path.insert(0, str(ROOT))
    from core.config import config_with, get_config
    from knowledge.ingest import IngestRequest, vault_ingest
    from knowledge.store import documents_delete

    root = Path(tempfile.mkdtemp(prefix="local-rag-bench-servers-"))
    try:
        generate(root, args.notes, args.seed)
        relative = [path.relative_to(root).as_posix() for path in root.rglob("*.md")]
        for count in args.servers:
            vacuum()
            servers = [subprocess.Popen(
                [sys.executable, "-m", "tests.knowledge.stub_embeddings", "--serial",
                 "--delay-ms", str(args.batch_ms)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
                for _ in range(count)]
            try:
                urls = [server.stdout.readline().strip() for server in servers]  # type: ignore[union-attr]
                config = config_with(
                    get_config(), EMBEDDING_PROVIDER="openai-compatible",
                    EMBEDDING_MODEL="stub-embed", EMBEDDING_BASE_URL=",".join(urls),
                    EMBEDDING_MAX_CONCURRENCY=str(args.concurrency))
                started = time.perf_counter()
                result = vault_ingest(IngestRequest(vault_path=root), config=config)
                elapsed = time.perf_counter() - started
            finally:
                for server in servers:
                    server.terminate()
                    server.wait(timeout=10)
            batches = -(-result.embeddings_written // 10)
            print(json.dumps({
                "servers": count, "batch_ms": args.batch_ms, "concurrency": args.concurrency,
                "notes": args.notes, "chunks": result.embeddings_written,
                "seconds": round(elapsed, 2),
                "chunks_per_s": round(result.embeddings_written / elapsed, 1),
                "ceiling_chunks_per_s": round(count * 10 / (args.batch_ms / 1000), 1),
                "servers_busy_share": round(batches * args.batch_ms / 1000 / elapsed / count, 3),
                "embed_seconds": result.timings.get("embed"),
                "timings": result.timings}), flush=True)
            documents_delete(vault_path=str(root.resolve()), relative_paths=relative)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
