"""Fixtures of the restore tests (test_restore.py, test_restore_hostile.py) and the upgrade
tests (test_db_upgrade.py): a project folder, new empty databases, and an archive of the sample
vault."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from core.config import get_config
from core.dburl import database_settings
from tests.conftest import DEFAULT_KB, RAG_TABLES, cli_env
from tests.harness import ROOT, bootstrap_credentials


@pytest.fixture
def project() -> Iterator[Path]:
    """A project folder of its own, so its upload folder is not the repository's."""
    root = Path(tempfile.mkdtemp(prefix="lrrs-"))
    (root / "pyproject.toml").write_text("[project]\nname='scratch'\n")
    (root / ".env.sample").write_text("")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def new_database() -> Iterator[Callable[..., str]]:
    """Make new, empty databases in the test cluster, owned by the application's role, with
    pgvector unless asked otherwise (as a DBA would prepare one); each dropped afterwards. The
    URL connects as the application's role, or as the cluster's superuser with `superuser`."""
    credentials = bootstrap_credentials()
    if credentials is None:
        pytest.skip("needs the test cluster's bootstrap superuser (tests/run_with_cluster.py)")
    settings = database_settings(get_config().test_database_url)
    names: list[str] = []

    def admin(dbname: str) -> psycopg.Connection:
        return psycopg.connect(host=settings["HOST"], port=settings["PORT"] or None,
                               user=credentials[0], password=credentials[1], dbname=dbname,
                               autocommit=True)

    def make(*, vector: bool = True, superuser: bool = False) -> str:
        name = f"restore_{secrets.token_hex(4)}_test"
        with admin(settings["NAME"]) as conn:
            conn.execute(f"CREATE DATABASE {name} OWNER {settings['USER']} TEMPLATE template0 "
                         "ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'")
        names.append(name)
        if vector:
            with admin(name) as conn:
                conn.execute("CREATE EXTENSION vector")
        user, password = credentials if superuser else (settings["USER"], settings["PASSWORD"])
        return f"postgresql://{quote(user)}:{quote(password)}@/{name}?host={settings['HOST']}"

    yield make
    with admin(settings["NAME"]) as conn:
        for name in names:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def empty_database(new_database) -> str:
    """The URL of a new, empty database with pgvector (new_database)."""
    return new_database()


@pytest.fixture(scope="module")
def archive(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Path]:
    """An archive of the test database holding the sample vault, made once for the module (the
    tests only read it, or rewrite copies of it); the tables are emptied again afterwards."""
    from django.db import connection

    def truncate() -> None:
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {RAG_TABLES} RESTART IDENTITY CASCADE")
            cursor.execute(DEFAULT_KB)

    folder = tmp_path_factory.mktemp("archive")
    (folder / "pyproject.toml").write_text("[project]\nname='scratch'\n")
    (folder / ".env.sample").write_text("")
    path = folder / "site.tar"
    truncate()
    try:
        for args in (("ingest", str(ROOT / "samples" / "acme-vault")), ("backup", str(path))):
            result = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=folder,
                                    env=cli_env(), capture_output=True, text=True, timeout=120)
            assert result.returncode == 0, result.stderr
        yield path
    finally:
        truncate()
