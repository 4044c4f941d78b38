"""`rag pg start | stop | status`: the project's embedded PostgreSQL under `.local/pg/`.

`.local/pg/` (mode 0700) holds the data directory, the server log and `bootstrap.json`, the
bootstrap superuser's credentials. The application's own password lives in DATABASE_URL /
TEST_DATABASE_URL in `.env` (mode 0600), or in `.local/pg/database.env` when DATABASE_URL comes
from the OS environment, which `rag pg start` never overrides.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from core.config import Config
from core.dburl import database_name, url_with_port
from ops.embedded_pg import (
    Cluster,
    ClusterStatus,
    EmbeddedPostgresError,
    free_port,
    is_root,
    private_folder_ensure,
    reachable_by_run_user,
)
from ops.env_file import env_file_update
from ops.pg_auth import (
    BOOTSTRAP_FILE,
    AppAccess,
    bootstrap_create,
    bootstrap_load,
    cluster_access_ensure,
    hba_allows_trust,
    password_generate,
    password_strong,
    private_file_write,
    state_folder_ensure,
    vector_extension_ensure,
)
from ops.pg_upgrade import legacy_cluster_upgrade

# Clusters of clones the `postgres` user cannot reach (see cluster_folder).
EXTERNAL_CLUSTERS = Path("/var/lib/local-rag/clusters")
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", ""}
URL_KEYS = ("DATABASE_URL", "TEST_DATABASE_URL")
URLS_FILE = "database.env"


@dataclass(frozen=True)
class PgStartResult:
    status: ClusterStatus
    already_running: bool
    database_url: str = field(repr=False)  # carries the application's password
    env_file_updated: Path | None  # `.env`, rewritten with the port and/or a new password
    env_file_created: bool  # `.env` did not exist and was made from `.env.sample`
    urls_file: Path | None  # written instead of `.env` when DATABASE_URL is an OS variable
    password_generated: bool
    upgraded: bool  # a cluster from before passwords was brought to today's model
    databases_created: list[str]


def cluster_for(*, config: Config) -> Cluster:
    """The project's cluster: data in `<project root>/.local/pg/data`, or, for a root process
    whose clone the `postgres` user cannot reach (a clone in /root or any other 0700 folder),
    in a private folder outside the clone keyed to its path (`cluster_folder`)."""
    if config.project_root is None:
        raise EmbeddedPostgresError("cannot find the project root (a folder with pyproject.toml "
                                    "and .env.sample); run rag from inside the checkout")
    return Cluster(cluster_folder(project_root=config.project_root) / "data")


def cluster_folder(*, project_root: Path) -> Path:
    """Where the cluster of this clone keeps its data and credentials.

    `.local/pg` in the clone when the server's OS user can reach it (or a cluster is already
    there). Otherwise — root in a folder only its owner may enter — PostgreSQL could not open its
    own data there, and asking the operator to loosen their folders is no answer: the cluster
    goes to EXTERNAL_CLUSTERS/<hash of the clone's path>, a 0700 folder of the `postgres` user,
    found again by the same hash by `rag pg status` and `rag pg stop`."""
    local = project_root / ".local" / "pg"
    if (local / "data" / "PG_VERSION").exists() or not is_root() or reachable_by_run_user(
            project_root):
        return local
    key = hashlib.sha256(str(project_root.resolve()).encode()).hexdigest()[:16]
    for folder in (EXTERNAL_CLUSTERS.parent, EXTERNAL_CLUSTERS):
        private_folder_ensure(folder)
    return EXTERNAL_CLUSTERS / key


def pg_start(*, config: Config) -> PgStartResult:
    """Initialise (once) and start the embedded server on DATABASE_URL's port (or a free one),
    upgrade a cluster from before passwords, and make sure the application's roles, passwords,
    databases and `vector` extension are there; new URLs are written before they are used."""
    try:
        return _start(config=config)
    except OSError as exc:
        raise EmbeddedPostgresError(f"`rag pg start` could not use a file or folder: {exc}. "
                                    "Check that the project folder is writable by this user and "
                                    "run it again.") from exc


def _start(*, config: Config) -> PgStartResult:
    parts = urlsplit(config.database_url)
    if (parts.hostname or "") not in LOOPBACK_HOSTS:
        raise EmbeddedPostgresError(
            f"DATABASE_URL points at {parts.hostname}, not this machine; the embedded server only "
            "serves loopback. Use a localhost DATABASE_URL or your own server.")
    cluster = cluster_for(config=config)
    folder = cluster.data_dir.parent
    state_folder_ensure(folder)
    current = cluster.status()
    was_running = current.running
    if was_running:
        assert current.port is not None  # a running server's pid file names its port
        port = current.port
    else:
        port = free_port(parts.port or 5432)
    urls, generated = _urls_for(config=config, port=port)
    env_file, env_created, urls_file = _urls_persist(config=config, urls=urls, folder=folder)
    bootstrap = bootstrap_load(folder=folder)
    if not cluster.initialised:
        bootstrap = bootstrap or bootstrap_create(folder=folder)
        cluster.init(superuser=bootstrap.user, password=bootstrap.password)
    if not was_running:
        current = cluster.start(port=port)
    access = _access_for(urls)
    upgraded = hba_allows_trust(hba_file=cluster.hba_file)
    if upgraded:
        bootstrap = bootstrap or bootstrap_create(folder=folder)
        legacy_cluster_upgrade(cluster=cluster, port=port, bootstrap=bootstrap, access=access)
    if bootstrap is None:
        raise EmbeddedPostgresError(
            f"{folder / BOOTSTRAP_FILE} is missing, so `rag pg start` cannot manage the roles and "
            f"databases of the cluster in {cluster.data_dir}. Restore that file; or, if its data "
            f"can be rebuilt (`rag db init`, `rag ingest`), run `rag pg stop`, move {folder} "
            "aside and run `rag pg start` again.")
    created = cluster_access_ensure(host="127.0.0.1", port=port, bootstrap=bootstrap,
                                    access=access)
    return PgStartResult(current, already_running=was_running, database_url=urls["DATABASE_URL"],
                         env_file_updated=env_file, env_file_created=env_created,
                         urls_file=urls_file, password_generated=generated, upgraded=upgraded,
                         databases_created=created)


def _urls_for(*, config: Config, port: int) -> tuple[dict[str, str], bool]:
    """DATABASE_URL and TEST_DATABASE_URL on `port`, each with a strong password: the one it
    has, the one its user already got, or a generated one. True when one was generated."""
    passwords: dict[str, str] = {}
    urls = {}
    generated = False
    moved = port != (urlsplit(config.database_url).port or 5432)
    for key in URL_KEYS:
        url = config.raw[key]
        parts = urlsplit(url)
        user = unquote(parts.username or "") or config.postgres_user
        given = unquote(parts.password or "")
        if user not in passwords:
            if not password_strong(given):
                given, generated = password_generate(), True
            passwords[user] = given
        if passwords[user] != unquote(parts.password or "") or not parts.username:
            url = _url_with_credentials(url, user=user, password=passwords[user])
        if moved:
            url = url_with_port(url, port)
        urls[key] = url
    return urls, generated


def _url_with_credentials(url: str, *, user: str, password: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(
        netloc=f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"))


def _access_for(urls: dict[str, str]) -> AppAccess:
    roles: dict[str, str] = {}  # role -> password
    databases: dict[str, str] = {}  # database -> owning role
    for url in urls.values():
        parts = urlsplit(url)
        user = unquote(parts.username or "")
        roles.setdefault(user, unquote(parts.password or ""))
        if database_name(url):
            databases.setdefault(database_name(url), user)
    return AppAccess(roles=roles, databases=databases)


def _urls_persist(*, config: Config, urls: dict[str, str],
                  folder: Path) -> tuple[Path | None, bool, Path | None]:
    """Write changed URLs to `.env` (created from `.env.sample` when missing), or to
    `folder/database.env` when DATABASE_URL is an OS variable: (env file, created, urls file)."""
    if all(urls[key] == config.raw[key] for key in URL_KEYS):
        return None, False, None
    if config.sources["DATABASE_URL"] == "env" or config.env_file is None:
        path = folder / URLS_FILE
        private_file_write(path, "".join(f"{key}={url}\n" for key, url in urls.items()))
        return None, False, path
    written = env_file_update(config=config, values=urls)
    assert written is not None  # config.env_file is set
    return config.env_file, written[1], None


def embedded_vector_extension_ensure(*, config: Config, host: str, port: int | str | None,
                                     dbname: str) -> bool:
    """CREATE EXTENSION vector in `dbname` as the bootstrap superuser when `host:port` is this
    project's running embedded server and its bootstrap file exists; False for any other server
    (the knowledge migration's CREATE EXTENSION then runs as the configured user)."""
    if config.project_root is None or (host or "") not in LOOPBACK_HOSTS:
        return False
    cluster = cluster_for(config=config)
    bootstrap = bootstrap_load(folder=cluster.data_dir.parent)
    if bootstrap is None:
        return False
    status = cluster.status()
    if not status.running or status.port != int(port or 5432):
        return False
    vector_extension_ensure(host="127.0.0.1", port=status.port, bootstrap=bootstrap, dbname=dbname)
    return True


def pg_stop(*, config: Config) -> bool:
    """Stop the embedded server; False when it was not running."""
    return cluster_for(config=config).stop()


def pg_status(*, config: Config) -> ClusterStatus:
    """Whether the embedded server runs, with its pid and port."""
    return cluster_for(config=config).status()


# A local streaming replica of the embedded server (`rag pg replica`): its data beside the
# primary's, `<state folder>/replica/data`.
REPLICA_FOLDER = "replica"


@dataclass(frozen=True)
class ReplicaResult:
    status: ClusterStatus
    created: bool  # made now with pg_basebackup (else it existed and was started)
    url: str  # DATABASE_URL with the replica's port: what DATABASE_REPLICA_URLS holds
    env_file_updated: Path | None  # `.env`, when DATABASE_REPLICA_URLS was written there


def replica_for(*, config: Config) -> Cluster:
    return Cluster(cluster_for(config=config).data_dir.parent / REPLICA_FOLDER / "data")


def pg_replica_start(*, config: Config) -> ReplicaResult:
    """Make (once, with pg_basebackup from the running embedded server) and start a streaming
    replica on the next free port, and name it in DATABASE_REPLICA_URLS. For trying replicas
    on one machine; a replica on another machine is made the same way with its own binaries
    (docs/operations.md)."""
    primary = cluster_for(config=config)
    current = primary.status()
    if not current.running or current.port is None:
        raise EmbeddedPostgresError("the embedded PostgreSQL is not running; `rag pg start` "
                                    "first, then make its replica")
    replica = replica_for(config=config)
    created = False
    if not replica.initialised:
        bootstrap = bootstrap_load(folder=primary.data_dir.parent)
        if bootstrap is None:
            raise EmbeddedPostgresError(
                f"{primary.data_dir.parent / BOOTSTRAP_FILE} is missing: the replica is copied "
                "as the bootstrap superuser")
        replica.replicate_from(host="127.0.0.1", port=current.port, user=bootstrap.user,
                               password=bootstrap.password)
        created = True
    status = replica.status()
    if not status.running:
        status = replica.start(port=free_port(current.port + 1))
    assert status.port is not None  # a running server's pid file names its port
    url = url_with_port(config.database_url, status.port)
    written = None
    if url not in config.database_replica_urls and config.sources.get(
            "DATABASE_REPLICA_URLS") != "env":
        updated = env_file_update(config=config, values={
            "DATABASE_REPLICA_URLS": ",".join([*config.database_replica_urls, url])})
        written = updated[0] if updated is not None else None
    return ReplicaResult(status=status, created=created, url=url, env_file_updated=written)


def pg_replica_stop(*, config: Config) -> bool:
    """Stop the local replica; False when it was not running. Its data stays."""
    return replica_for(config=config).stop()
