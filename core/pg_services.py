"""`rag pg start | stop | status`: the project's embedded PostgreSQL under `.local/pg/`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from core.config import Config
from core.dburl import database_name, url_with_port
from core.embedded_pg import Cluster, ClusterStatus, EmbeddedPostgresError, free_port

LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", ""}


@dataclass(frozen=True)
class PgStartResult:
    status: ClusterStatus
    already_running: bool
    database_url: str
    env_file_updated: Path | None
    databases_created: list[str]


def cluster_for(*, config: Config) -> Cluster:
    """The cluster whose data lives in `<project root>/.local/pg/data`."""
    if config.project_root is None:
        raise EmbeddedPostgresError("cannot find the project root (a folder with pyproject.toml "
                                    "and .env.sample); run rag from inside the checkout")
    return Cluster(config.project_root / ".local" / "pg" / "data")


def _rewrite_env(env_file: Path, values: dict[str, str]) -> None:
    text = env_file.read_text(encoding="utf-8")
    for key, value in values.items():
        pattern = re.compile(rf"^{key}=.*$", re.MULTILINE)
        if pattern.search(text):
            text = pattern.sub(lambda _m, k=key, v=value: f"{k}={v}", text)
        else:
            text = text.rstrip("\n") + f"\n{key}={value}\n"
    env_file.write_text(text, encoding="utf-8")


def pg_start(*, config: Config) -> PgStartResult:
    """Initialise (once) and start the embedded server on DATABASE_URL's port, or on a free
    port written back into `.env` when that one is taken; create the app and test databases."""
    url = config.database_url
    parts = urlsplit(url)
    if (parts.hostname or "") not in LOOPBACK_HOSTS:
        raise EmbeddedPostgresError(
            f"DATABASE_URL points at {parts.hostname}, not this machine; the embedded server only "
            "serves loopback. Use a localhost DATABASE_URL or your own server.")
    superuser = parts.username or config.postgres_user
    cluster = cluster_for(config=config)
    current = cluster.status()
    was_running = current.running
    if was_running:
        port = current.port
    else:
        cluster.init(superuser=superuser)
        port = free_port(parts.port or 5432)
        current = cluster.start(port=port)
    updated = None
    if port != (parts.port or 5432):
        url = url_with_port(url, port)
        new_values = {"DATABASE_URL": url,
                      "TEST_DATABASE_URL": url_with_port(config.test_database_url, port)}
        if config.env_file and config.env_file.is_file() and config.sources["DATABASE_URL"] != "env":
            _rewrite_env(config.env_file, new_values)
            updated = config.env_file
    created = []
    for name in (database_name(url), database_name(config.test_database_url)):
        if name and cluster.create_database(name=name, superuser=superuser, port=port):
            created.append(name)
    return PgStartResult(current, already_running=was_running, database_url=url, env_file_updated=updated, databases_created=created)


def pg_stop(*, config: Config) -> bool:
    """Stop the embedded server; False when it was not running."""
    return cluster_for(config=config).stop()


def pg_status(*, config: Config) -> ClusterStatus:
    """Whether the embedded server runs, with its pid and port."""
    return cluster_for(config=config).status()
