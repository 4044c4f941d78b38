"""Shared set-up of the benchmarks: Django on the configured database (DATABASE_URL)."""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "localrag_site.settings")
    import django

    django.setup()


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds of `samples` (seconds), and how many there were."""
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
            "requests": len(ordered)}


def vacuum() -> None:
    """VACUUM ANALYZE the index tables, so a measurement never pays for an earlier run's dead
    rows (autovacuum would get there too, at a time of its choosing)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) documents, chunks, embeddings")


def server_start(*, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """`rag serve` on a free loopback port; returns the process and its base URL once it
    answers."""
    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "serve", "--port",
                                str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            httpx.get(f"{url}/openapi.json", timeout=1)
            return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not start")
