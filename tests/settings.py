"""Settings for the test suite: the real settings, pointed at TEST_DATABASE_URL, with the
fake embedder and fake LLM forced whatever the developer's shell or `.env` says."""

from __future__ import annotations

import os
from pathlib import Path

from tests.harness import FORCED_ENV, SAMPLE_ENV_FILE, worker_url

# The test harness is the one place besides core.config that sets the environment:
# it must win over the developer's shell so no test downloads a model or calls a real LLM.
os.environ.update(FORCED_ENV)
# A pytest-xdist worker uses its own database (and its CLI subprocesses inherit it).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER and os.environ.get("TEST_DATABASE_URL"):
    os.environ["TEST_DATABASE_URL"] = worker_url(os.environ["TEST_DATABASE_URL"], _WORKER)
os.environ["LOCALRAG_ENV_FILE"] = str(SAMPLE_ENV_FILE)

from core.dburl import database_settings  # noqa: E402
from localrag_site.settings import *  # noqa: E402,F403

DATABASES = {"default": database_settings(CONFIG.test_database_url)}  # noqa: F405
DATABASES["default"]["TEST"] = {"NAME": DATABASES["default"]["NAME"]}
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]  # noqa: F405 — Django's test client
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STATIC_ROOT = Path("/tmp") / f"local-rag-test-static{'-' + _WORKER if _WORKER else ''}"
