"""Session-wide fixtures: a guarded, initialised test database on real PostgreSQL + pgvector."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.harness import (
    FORCED_ENV,
    ROOT,
    SAMPLE_ENV_FILE,
    UnsafeTestDatabase,
    assert_safe_test_database,
    bootstrap_credentials,
    config_changed,
)

if TYPE_CHECKING:
    from core.config import Config

RAG_TABLES = ("ingest_runs, embeddings, chunks, documents, background_jobs, "
              "knowledge_base_sources, knowledge_bases, traces, vector_index_tuning")
# TRUNCATE empties knowledge_bases too; the `default` base that knowledge's migrations create
# comes back.
DEFAULT_KB = "INSERT INTO knowledge_bases (slug, name) VALUES ('default', 'Default')"


def _config():
    from core.config import get_config

    return get_config()


def pytest_sessionstart(session) -> None:
    config = _config()
    try:
        assert_safe_test_database(test_url=config.test_database_url, main_url=config.database_url)
    except UnsafeTestDatabase as exc:
        pytest.exit(f"unsafe test database: {exc}", returncode=3)


# Knowledge-base ids of pytest-xdist worker gw<N> start at 1 + (N + 1) × this: apart from each
# other's and from a development database's small ids, whose upload folders share .local/uploads.
WORKER_ID_STRIDE = 1_000_000


def knowledge_base_first_id() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return 1 + ((int(worker.removeprefix("gw")) + 1) * WORKER_ID_STRIDE if worker else 0)


@pytest.fixture(autouse=True)
def breakers_forgotten():
    """Each test starts with closed circuit breakers (core/breaker.py): they live per process,
    and tests that point at the same dead address would otherwise open one for the next."""
    from core.breaker import breakers_reset

    breakers_reset()
    yield


@pytest.fixture(autouse=True)
def search_index_background_off():
    """No test meets a search-index catch-up thread it did not start: pytest-django's live
    server imports localrag_site.wsgi, which enables the server's background catch-ups for the
    rest of that test process, and a later test would then race them."""
    from index import maintenance

    maintenance._background.enabled = False
    yield
    maintenance._background.enabled = False


@pytest.fixture(scope="session")
def django_db_setup(django_db_blocker):
    """Use the database named by TEST_DATABASE_URL as it is: apply the migrations, then start
    from empty RAG tables."""
    from django.db import connection

    from ops.db_init import db_init

    config = _config()
    assert_safe_test_database(test_url=config.test_database_url, main_url=config.database_url)
    with django_db_blocker.unblock():
        db_init()
        with connection.cursor() as cursor:
            # Uploads go to <project>/.local/uploads/kb-<id>: the workers' bases get ids apart,
            # so two workers' uploads never share a folder (RESTART IDENTITY restarts here).
            cursor.execute(f"ALTER SEQUENCE knowledge_bases_id_seq START WITH "
                           f"{knowledge_base_first_id()}")
            cursor.execute(f"TRUNCATE {RAG_TABLES} RESTART IDENTITY CASCADE")
            cursor.execute(DEFAULT_KB)


@pytest.fixture
def schema_from_before(db):
    """Make the test's database one made before a migration: forget that it, and every
    migration that depends on it, was applied (rolled back with the test), so that `rag db init`
    applies them again, as it does on an installation from before them."""
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader
    from django.db.migrations.recorder import MigrationRecorder

    def forget(app_label: str, name: str) -> None:
        graph = MigrationLoader(None, ignore_no_migrations=True).graph
        recorder = MigrationRecorder(connection)
        for later_app, later_name in graph.backwards_plan((app_label, name)):
            recorder.record_unapplied(later_app, later_name)

    return forget


@pytest.fixture
def clean_tables(transactional_db):
    """For tests that commit (concurrency, subprocesses): empty RAG tables before and after."""
    from django.db import connection

    def truncate() -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {RAG_TABLES} RESTART IDENTITY CASCADE")
            cursor.execute(DEFAULT_KB)
        search_indexes_remove()

    truncate()
    yield
    truncate()


def search_indexes_remove() -> None:
    """This test database's search indexes (index/store.py): the ids they are kept under start
    again after a TRUNCATE ... RESTART IDENTITY, and a test starts without another's."""
    import shutil

    from django.db import connection

    root = _config().search_index_dir
    if root.is_dir():
        for folder in root.glob(f"{connection.settings_dict['NAME']}-*"):
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def superuser_db(django_db_setup, django_db_blocker):
    """Instead of `db`, for a test whose statements the application's role may not run (e.g.
    DROP EXTENSION vector): Django's connection logs in as the test cluster's bootstrap
    superuser for this one test, still on the guarded test database, and everything is rolled
    back. Outside tests/run_with_cluster.py (no bootstrap credentials) the configured user is
    used as it is."""
    from django.db import connection, transaction

    credentials = bootstrap_credentials()
    saved = {key: connection.settings_dict[key] for key in ("USER", "PASSWORD")}
    with django_db_blocker.unblock():
        connection.close()
        if credentials is not None:
            connection.settings_dict.update(USER=credentials[0], PASSWORD=credentials[1])
        try:
            with transaction.atomic():
                yield
                transaction.set_rollback(True)
        finally:
            # The next test must connect as the application again, never reuse this session.
            connection.close()
            connection.settings_dict.update(saved)


def cli_env(**overrides: str) -> dict[str, str]:
    """Environment of a CLI subprocess: the test database as DATABASE_URL, fakes forced."""
    config = _config()
    env = dict(os.environ)
    env.update(FORCED_ENV)
    env["LOCALRAG_ENV_FILE"] = str(SAMPLE_ENV_FILE)
    env["DATABASE_URL"] = config.test_database_url
    env["TEST_DATABASE_URL"] = config.test_database_url
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(overrides)
    return env


@pytest.fixture
def run_cli():
    """Run `manage.py <args>` (the same entry point as `rag`) as a subprocess."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
            cwd=None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=cwd or ROOT,
                              env=env or cli_env(), capture_output=True, text=True,
                              timeout=timeout)

    return run


@pytest.fixture
def config_override() -> Iterator[Callable[..., Config]]:
    """Change settings process-wide for one test: `config_override(rag_top_k=3)` or
    `config_override(RAG_TOP_K="3")`, validated as at start-up (tests.harness.config_changed
    says what it takes). Each call starts again from the configuration the test began with,
    which comes back afterwards; returns the configuration now in use."""
    from core.config import config_use, get_config

    base = get_config()

    def apply(**changes: object) -> Config:
        changed = config_changed(base, **changes)
        config_use(changed)
        return changed

    yield apply
    config_use(base)


@pytest.fixture
def sample_index(db):
    """The sample vault, ingested with the fake embedder (rolled back after the test)."""
    from core.config import get_config
    from knowledge.ingest import IngestRequest, vault_ingest

    return vault_ingest(IngestRequest(vault_path=ROOT / "samples" / "acme-vault",
                                      prepare_workers=0), config=get_config())


# The sample note that `paged_index` gives pages, as if its chunks came from a PDF.
PAGED_SOURCE = "policies/Support Escalation Policy.md"


@pytest.fixture
def paged_index(sample_index):
    """The sample vault with page spans on PAGED_SOURCE's chunks, put there directly: page 3
    for an even chunk index, pages 3–4 for an odd one; every other note keeps none. Returns
    chunk_index -> (page_start, page_end) of PAGED_SOURCE."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("UPDATE chunks SET page_start = 3, page_end = 3 + chunk_index %% 2 "
                       "WHERE relative_path = %s RETURNING chunk_index, page_start, page_end",
                       [PAGED_SOURCE])
        pages = {chunk_index: (start, end) for chunk_index, start, end in cursor.fetchall()}
    assert set(pages.values()) == {(3, 3), (3, 4)}, "the note needs chunks of both kinds"
    return pages


@contextmanager
def scratch_project_folder() -> Iterator[Path]:
    """An empty project folder for `rag pg` (its cluster is stopped and removed afterwards)."""
    from core.config import config_load
    from ops.pg_services import pg_stop

    # Not under pytest's tmp_path: that is mode 700 for root, and the server runs as `postgres`.
    root = Path(tempfile.mkdtemp(prefix="lrpg-", dir="/tmp"))
    root.chmod(0o755)
    (root / "pyproject.toml").write_text("[project]\nname='scratch'\n")
    (root / ".env.sample").write_text("")
    try:
        yield root
    finally:
        try:
            if root.exists():
                pg_stop(config=config_load(environ={}, start_dir=root))
        finally:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def scratch_project():
    with scratch_project_folder() as root:
        yield root
