"""Shared set-up of the benchmarks: Django on the configured database (DATABASE_URL)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "localrag_site.settings")
    import django

    django.setup()


def vacuum() -> None:
    """VACUUM ANALYZE the index tables, so a measurement never pays for an earlier run's dead
    rows (autovacuum would get there too, at a time of its choosing)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) documents, chunks, embeddings")
