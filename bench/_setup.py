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
