"""Searches on a read replica: a streaming standby of the test cluster made with the wheel's
`pg_basebackup`, started beside it, stopped in the middle of the test and started again."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from django.db import connection, connections

from access.callers import scope_all
from core.config import config_with, get_config
from core.replicas import primary_reads, replica_aliases, replica_states
from knowledge.ingest import IngestRequest, vault_ingest
from ops.embedded_pg import Cluster
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.harness import ROOT, bootstrap_credentials
from traces.recording import trace_record, traced

SAMPLE_VAULT = ROOT / "samples" / "acme-vault"
QUESTION = "客户 P1 工单应该怎么升级？"


@pytest.fixture(scope="module")
def replica() -> Iterator[tuple[Cluster, Path, str]]:
    """(the standby, its socket folder, its URL for the test database)."""
    credentials = bootstrap_credentials()
    if credentials is None:
        pytest.skip("needs the test cluster's bootstrap credentials (tests/run_with_cluster.py)")
    test_url = urlsplit(get_config().test_database_url)
    primary_socket = dict(part.split("=", 1) for part in test_url.query.split("&"))["host"]
    root = Path(tempfile.mkdtemp(prefix="lrr-", dir="/tmp"))
    root.chmod(0o755)
    standby = Cluster(root / "data")
    try:
        standby.replicate_from(host=primary_socket, port=5432, user=credentials[0],
                               password=credentials[1])
        socket_dir = root / "s"
        standby.start(port=5432, socket_dir=socket_dir)
        url = (f"postgresql://{quote(test_url.username or '')}:{quote(test_url.password or '')}"
               f"@{test_url.path}?host={socket_dir}")
        # Registered before a test's database set-up, which then lets the test reach it (as a
        # mirror of `default`, it is never flushed).
        replica_aliases(config_with(get_config(), DATABASE_REPLICA_URLS=url))
        yield standby, socket_dir, url
    finally:
        standby.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def on_replica(replica, clean_tables, config_override):
    """The configuration with the standby as the one replica (checked at every search)."""
    _, _, url = replica
    config = config_override(DATABASE_REPLICA_URLS=url, RAG_REPLICA_CHECK_SECONDS="0.001")
    yield config
    for alias in replica_aliases(config):
        connections[alias].close()


def replica_count(config, table: str = "chunks") -> int:
    [alias] = replica_aliases(config)
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        return cursor.fetchone()[0]


def caught_up(config, *, chunks: int, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while replica_count(config) != chunks and time.monotonic() < deadline:
        time.sleep(0.1)
    assert replica_count(config) == chunks


def traced_search(config, **options):
    with traced(operation="search", channel="test") as trace:
        outcome = search(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=5,
                                          mode="hybrid", **options), config=config)
        trace_record(trace, outcome.measures)
    return outcome, trace.parameters.get("database")


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_searches_read_the_replica_and_fall_back_to_the_primary(replica, on_replica):
    standby, socket_dir, _ = replica
    config = on_replica
    result = vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=config)
    caught_up(config, chunks=result.chunks_written)
    [state] = replica_states(config)
    assert state["usable"] and state["lag_seconds"] is not None and state["lag_seconds"] < 5
    assert "password" not in state["url"] and (urlsplit(state["url"]).password or "") in (
        "", "***")

    on_standby, database = traced_search(config)
    assert database == "replica-1"
    with primary_reads():
        on_primary, forced = traced_search(config)
    assert forced == "primary"
    assert [hit.chunk_id for hit in on_standby.results] == [
        hit.chunk_id for hit in on_primary.results]
    assert on_standby.results[0].relative_path == "policies/Support Escalation Policy.md"

    # Over the API: `X-Read-Primary: 1` keeps a caller's search on the primary.
    from django.test import Client

    client = Client(raise_request_exception=False)
    for headers, expected in (({}, "replica-1"), ({"HTTP_X_READ_PRIMARY": "1"}, "primary")):
        response = client.post("/search", data={"query": QUESTION},
                               content_type="application/json", **headers)
        assert response.status_code == 200, response.content
        with connection.cursor() as cursor:
            cursor.execute("SELECT parameters ->> 'database' FROM traces WHERE id = %s",
                           [response.json()["trace_id"]])
            assert cursor.fetchone() == (expected,)

    replicas = client.get("/health").json()["details"]["replicas"]
    assert [replica["usable"] for replica in replicas] == [True]

    # The replica goes away while it is still known as usable (its last check is recent): the
    # search fails there, the replica is dropped, and the search is done on the primary.
    trusting = config_with(config, RAG_REPLICA_CHECK_SECONDS="600")
    assert traced_search(trusting)[1] == "replica-1"
    standby.stop()
    outcome, database = traced_search(trusting)
    assert database == "primary"
    assert [hit.chunk_id for hit in outcome.results] == [
        hit.chunk_id for hit in on_primary.results]
    assert traced_search(trusting)[1] == "primary"  # dropped: not tried again for a while
    assert replica_states(config)[0]["usable"] is False
    assert client.get("/health").json()["details"]["replicas"][0]["usable"] is False

    standby.start(port=5432, socket_dir=socket_dir)
    deadline = time.monotonic() + 20
    while not replica_states(config)[0]["usable"] and time.monotonic() < deadline:
        time.sleep(0.2)
    _, database = traced_search(config)
    assert database == "replica-1"


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_writes_go_to_the_primary_even_inside_a_search(replica, on_replica):
    config = on_replica
    result = vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=config)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM ingest_runs")
        assert cursor.fetchone() == (1,)
    # Within the lag bound the replica may not hold the ingest yet (documented): wait for it.
    caught_up(config, chunks=result.chunks_written)
    # The trace of a search on the replica is written, and to the primary.
    _, database = traced_search(config)
    with connection.cursor() as cursor:
        cursor.execute("SELECT parameters ->> 'database' FROM traces ORDER BY created_at DESC "
                       "LIMIT 1")
        assert cursor.fetchone() == (database,)


def test_a_replica_url_is_checked_and_masked_where_settings_are_shown():
    from core.config import ConfigError

    with pytest.raises(ConfigError, match="DATABASE_REPLICA_URLS"):
        config_with(get_config(), DATABASE_REPLICA_URLS="mysql://x/y")
    config = config_with(get_config(), DATABASE_REPLICA_URLS=(
        "postgresql://app:s3cret-pass@r1:5432/local_rag,postgresql://app:other-pass@r2/local_rag"))
    shown = dict((name, value) for name, value, _ in config.display_items())
    assert "s3cret-pass" not in shown["DATABASE_REPLICA_URLS"]
    assert "other-pass" not in shown["DATABASE_REPLICA_URLS"]
    assert "r1:5432" in shown["DATABASE_REPLICA_URLS"] and "r2" in shown["DATABASE_REPLICA_URLS"]
