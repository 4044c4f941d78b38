"""Test-harness helpers: the forced environment, the guard on the test database name, and the
test cluster's bootstrap-superuser credentials."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from core.dburl import database_name

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_ENV_FILE = ROOT / ".env.sample"
FORCED_ENV = {
    "EMBEDDING_PROVIDER": "fake",
    "EMBEDDING_MODEL": "fake-lexical-v1",
    "LLM_PROVIDER": "fake",
}

# Set by tests/run_with_cluster.py: the bootstrap superuser of the throw-away cluster.
BOOTSTRAP_URL_VARIABLE = "LOCALRAG_TEST_BOOTSTRAP_URL"


def worker_database(worker: str) -> str:
    """The test database of pytest-xdist worker `worker` (gw0, gw1, ...); created by
    tests/run_with_cluster.py, ends in `_test` like every test database."""
    return f"local_rag_{worker}_test"


def worker_url(url: str, worker: str) -> str:
    """`url` with its database replaced by the worker's own."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{worker_database(worker)}"))


# Advisory locks held in the current database: pg_locks lists the whole cluster's, and other
# test workers' databases share the cluster.
ADVISORY_LOCKS_HERE = ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                       "(SELECT oid FROM pg_database WHERE datname = current_database())")


class UnsafeTestDatabase(Exception):
    pass


def assert_safe_test_database(*, test_url: str, main_url: str) -> str:
    """The test database must end with `_test` and differ from DATABASE_URL's; returns its name."""
    test_name, main_name = database_name(test_url), database_name(main_url)
    if not test_name.endswith("_test"):
        raise UnsafeTestDatabase(
            f"TEST_DATABASE_URL names database {test_name!r}, which does not end with '_test'; "
            "refusing to initialise or truncate it")
    if test_name == main_name:
        raise UnsafeTestDatabase(
            f"TEST_DATABASE_URL and DATABASE_URL both name database {test_name!r}; "
            "refusing to touch the application's data")
    return test_name


def bootstrap_credentials() -> tuple[str, str] | None:
    """(user, password) of the test cluster's bootstrap superuser, None outside the runner.

    Read here rather than through core.config: it is a property of the test run, never a
    setting of the application."""
    url = os.environ.get(BOOTSTRAP_URL_VARIABLE, "")
    if not url:
        return None
    parts = urlsplit(url)
    return unquote(parts.username or ""), unquote(parts.password or "")
