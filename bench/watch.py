"""Watch-mode benchmark: time from saving a note to finding its new text through the API.

A temporary vault of N notes becomes the source of a fresh knowledge base; `rag serve` runs with
RAG_WATCH=true (`--via serve`: the watch queues a job, the server's worker runs it) or beside a
`rag watch` process (`--via watch`: the ingest runs in that process). Each run saves one note
the way Obsidian does (a temporary file renamed over it) with a new word in it, then polls
/search every 20 ms until a result of that note holds the word. Prints one JSON line per save and a
summary with p50/p95.

Runs against DATABASE_URL (`rag pg start && rag db init` first). With `--via serve` the server
watches every vault folder of that database (each gets one sync at start, which skips unchanged
files). The benchmark's base, documents and folder are removed afterwards.

    .venv/bin/python bench/watch.py --saves 20 --notes 200 --via serve
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _setup import ROOT, django_setup, server_start

POLL_SECONDS = 0.02
BOUND_SECONDS = 60.0


def note_text(index: int, marker: str = "") -> str:
    return (f"# Note {index}\n\nField notes number {index} on granite, drill core and assay "
            f"grade {index * 7 % 97}. {marker}\n")


def found(client, word: str, name: str) -> bool:
    """True when a search for `word` returns a chunk of `name` holding it (with the fake
    embedder every search returns something: the text must be checked)."""
    results = client.post("/search", json={"query": word, "top_k": 5}).json()["results"]
    return any(result["source"] == name and word in result["content"] for result in results)


def wait_until(condition, *, what: str) -> float:
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > BOUND_SECONDS:
            raise SystemExit(f"not within {BOUND_SECONDS:.0f} s: {what}")
        time.sleep(POLL_SECONDS)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--notes", type=int, default=200, help="notes in the vault")
    parser.add_argument("--via", choices=("serve", "watch"), default="serve")
    parser.add_argument("--pause", type=float, default=0.5,
                        help="seconds between one save being found and the next save")
    args = parser.parse_args()
    django_setup()
    import httpx

    from knowledge.bases import kb_create, kb_delete, kb_source_add
    from knowledge.vault_index import vault_forget

    slug = f"bench-watch-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as folder:
        vault = Path(folder).resolve()
        for index in range(args.notes):
            (vault / f"Note {index:04d}.md").write_text(note_text(index), encoding="utf-8")
        kb_create(slug=slug, name="watch benchmark")
        kb_source_add(slug=slug, path=vault)
        env = {**os.environ, "RAG_WATCH": "true" if args.via == "serve" else "false"}
        watcher = None
        if args.via == "watch":
            watcher = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "watch",
                                        str(vault)], cwd=ROOT, env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        process, url = server_start(env=env)
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                last = f"Note {args.notes - 1:04d}.md"
                ready = wait_until(lambda: found(client, f"number {args.notes - 1}", last),
                                   what="the vault indexed at start")
                print(json.dumps({"measurement": "first_sync", "notes": args.notes,
                                  "seconds": round(ready, 3)}), flush=True)
                seconds = []
                for run in range(args.saves):
                    index = run % args.notes
                    note = vault / f"Note {index:04d}.md"
                    # Letters only: the lexical channel makes terms of digit runs too.
                    marker = "zq" + "".join(chr(ord("a") + int(digit, 16))
                                            for digit in uuid.uuid4().hex[:12])
                    temporary = vault / f".{note.name}.tmp"
                    temporary.write_text(note_text(index, marker), encoding="utf-8")
                    os.replace(temporary, note)
                    took = wait_until(lambda marker=marker, name=note.name: found(
                        client, marker, name), what=f"save {run} searchable")
                    seconds.append(took)
                    print(json.dumps({"measurement": "save_to_searchable", "run": run,
                                      "via": args.via, "seconds": round(took, 3)}), flush=True)
                    time.sleep(args.pause)
            ordered = sorted(seconds)
            p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
            print(json.dumps({"measurement": "summary", "via": args.via, "saves": len(seconds),
                              "notes": args.notes, "p50": round(statistics.median(seconds), 3),
                              "p95": round(p95, 3), "max": round(ordered[-1], 3)}), flush=True)
        finally:
            for running in (process, watcher):
                if running is not None:
                    running.terminate()
                    running.wait(timeout=60)
            vault_forget(vault_path=vault)
            kb_delete(slug=slug)


if __name__ == "__main__":
    main()
