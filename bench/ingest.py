"""Ingest benchmark: a synthetic vault of N notes; cold ingest, unchanged re-ingest, 1% changed.

Runs against DATABASE_URL (start it with `rag pg start && rag db init`). Prints one JSON line per
measurement. The synthetic vault's documents are removed afterwards unless --keep is given.

    .venv/bin/python bench/ingest.py --notes 5000
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from _setup import django_setup, vacuum

EN_WORDS = ("latency deploy customer export policy incident escalation runbook database replica "
            "quota token invoice contract pipeline cluster failover alert dashboard region "
            "backup restore retention audit schema migration index throughput release").split()
ZH_WORDS = ("客户 工单 升级 导出 限制 延迟 告警 数据 合同 审计 备份 恢复 "
            "发布 集群 索引 性能 值班 流程").split()


def paragraph(rng: random.Random, sentences: int) -> str:
    parts = []
    for _ in range(sentences):
        if rng.random() < 0.5:
            words = rng.choices(EN_WORDS, k=rng.randint(8, 18))
            parts.append(" ".join(words).capitalize() + ".")
        else:
            parts.append("".join(rng.choices(ZH_WORDS, k=rng.randint(6, 14))) + "。")
    return " ".join(parts)


def note_text(rng: random.Random, index: int, total: int) -> str:
    tags = rng.sample(["ops", "policy/data", "runbook", "客户支持", "sales", "infra"], k=2)
    lines = [f"---\nowner: team-{index % 17}\nupdated: 2026-0{1 + index % 9}-1{index % 9}\n"
             f"tags: [{', '.join(tags)}]\n---", f"# Note {index}"]
    for section in range(rng.randint(2, 5)):
        lines.append(f"## Section {section} {rng.choice(EN_WORDS)}")
        for _ in range(rng.randint(1, 4)):
            link = f" See [[Note {rng.randrange(total)}]]." if rng.random() < 0.4 else ""
            lines.append(paragraph(rng, rng.randint(2, 6)) + link + f" #{rng.choice(tags)}")
        if rng.random() < 0.2:
            lines.append("```bash\n# not a heading\nkubectl get pods\n```")
    return "\n\n".join(lines) + "\n"


def generate(root: Path, notes: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for index in range(notes):
        folder = root / f"area-{index % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"note-{index:05d}.md"
        path.write_text(note_text(rng, index, notes), encoding="utf-8")
        paths.append(path)
    return paths


def measure(name: str, root: Path, notes: int, workers: int | None) -> dict:
    from core.config import get_config
    from knowledge.ingest import IngestRequest, vault_ingest

    started = time.perf_counter()
    result = vault_ingest(IngestRequest(vault_path=root, prepare_workers=workers),
                          config=get_config())
    elapsed = time.perf_counter() - started
    line = {"measurement": name, "notes": notes, "prepare_workers": workers,
            "seconds": round(elapsed, 3),
            "files_per_s": round(notes / elapsed, 1),
            "chunks_written": result.chunks_written,
            "chunks_per_s": (round(result.chunks_written / elapsed, 1)
                             if result.chunks_written else 0),
            "added": result.documents_added, "updated": result.documents_updated,
            "skipped": result.documents_skipped, "timings": result.timings}
    print(json.dumps(line), flush=True)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--workers", type=int, default=None,
                        help="parse/chunk worker processes (default: cores - 1; 0 = none)")
    args = parser.parse_args()
    django_setup()
    from knowledge.store import documents_delete

    vacuum()  # start from a table without dead rows left by an earlier run
    root = Path(tempfile.mkdtemp(prefix="local-rag-bench-"))
    try:
        paths = generate(root, args.notes, args.seed)
        measure("cold_ingest", root, args.notes, args.workers)
        measure("unchanged_reingest", root, args.notes, args.workers)
        rng = random.Random(args.seed + 1)
        for path in rng.sample(paths, max(1, args.notes // 100)):
            path.write_text(path.read_text(encoding="utf-8") + "\nAppended change.\n",
                            encoding="utf-8")
        measure("one_percent_changed", root, args.notes, args.workers)
    finally:
        if not args.keep:
            relative = [p.relative_to(root).as_posix() for p in root.rglob("*.md")]
            documents_delete(vault_path=str(root.resolve()), relative_paths=relative)
            vacuum()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
