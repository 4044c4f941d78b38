"""Test-harness helpers: the forced environment, changed settings, the guard on the test
database name, and the test cluster's bootstrap-superuser credentials."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from core.config import Config, config_with
from core.dburl import database_name
from core.settings_table import SETTINGS_BY_FIELD, SETTINGS_BY_NAME

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_ENV_FILE = ROOT / ".env.sample"
FORCED_ENV = {
    "EMBEDDING_PROVIDER": "fake",
    "EMBEDDING_MODEL": "fake-lexical-v1",
    "LLM_PROVIDER": "fake",
}

# Config fields that no variable sets: where the project is, and how the server was started.
NOT_SETTINGS = frozenset({"project_root", "env_file", "trusted_network"})


def config_changed(config: Config, **changes: object) -> Config:
    """`config` with some settings changed, validated as at start-up: the one way tests change
    settings (the `config_override` fixture makes the result process-wide for one test).

    Each keyword names a setting of core/settings_table.py, by its variable with the text a user
    would write (`RAG_TOP_K="3"`) or by its Config field with the typed value (`rag_top_k=3`),
    which is written as text and must read back the same. Either way the table's parser, its
    bounds and the rules across settings check it, and a name outside the table fails, so a test
    never runs with a configuration no user could have. `project_root`, `env_file` and
    `trusted_network` are not settings and are replaced as given."""
    variables: dict[str, str] = {}
    typed: dict[str, object] = {}
    others: dict[str, Any] = {}
    for key, value in changes.items():
        if key in SETTINGS_BY_NAME:
            if not isinstance(value, str):
                raise TypeError(f"{key} takes the text of the variable, not {value!r}")
            variables[key] = value
        elif key in SETTINGS_BY_FIELD:
            variables[SETTINGS_BY_FIELD[key].name] = _setting_text(value)
            typed[key] = value
        elif key in NOT_SETTINGS:
            others[key] = value
        else:
            raise TypeError(f"{key} is neither a setting (core/settings_table.py) nor one of "
                            f"{', '.join(sorted(NOT_SETTINGS))}")
    changed = config_with(config, **variables) if variables else config
    for key, value in typed.items():
        if getattr(changed, key) != value:
            raise ValueError(f"{key}={value!r} cannot be set: {SETTINGS_BY_FIELD[key].name}="
                             f"{variables[SETTINGS_BY_FIELD[key].name]!r} reads as "
                             f"{getattr(changed, key)!r}")
    return dataclasses.replace(changed, **others)


def _setting_text(value: object) -> str:
    """The text a user would write for a typed setting value."""
    if value is None:
        return ""  # unset: the value derived elsewhere (e.g. the embedding provider's)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list | frozenset | set):
        # An empty value would mean unset (the default); a lone comma is an empty list.
        return ",".join(sorted(value) if isinstance(value, frozenset | set) else value) or ","
    return str(value)


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
