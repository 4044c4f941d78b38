"""Search on read replicas: DATABASE_REPLICA_URLS, one Django database per replica, chosen per
search among those that answer and are no further behind the primary than
RAG_REPLICA_MAX_LAG_SECONDS.

Only a search reads from a replica (retrieval/services.py wraps its statements in
`replica_reads`); everything else — writes, jobs, access checks, traces, conversations — uses
the primary (`default`), and so does a search when no replica qualifies. The router below sends
the ORM's reads inside such a block to the same replica and every write to the primary;
core.db.raw_connection (the index's statements) follows the same choice.

A replica's state is checked at most every RAG_REPLICA_CHECK_SECONDS per process (one found
unusable, every UNUSABLE_RECHECK_S at most): a replica that is down or lagging is skipped until
a later check finds it well, and one that fails in the middle of a search is marked down at
once (the search then runs again on the primary).

Replicas lag: a document written a moment ago may not be on one yet. A caller that must read
its own write at once asks for the primary (the API's `X-Read-Primary: 1` header; see
docs/operations.md), or waits RAG_REPLICA_MAX_LAG_SECONDS.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from core.config import Config
from core.dburl import database_settings, url_password_mask

logger = logging.getLogger("localrag.replicas")

ALIAS_PREFIX = "replica-"
# Seconds a replica's connection may take: a replica that is down is skipped, not waited for.
CONNECT_TIMEOUT_S = 2
# A replica found unusable is checked again after at least this long, so one that is down costs
# a connection attempt (up to CONNECT_TIMEOUT_S) that seldom, not every few seconds.
UNUSABLE_RECHECK_S = 10.0

# How far behind the primary a standby is: 0 while it has replayed all it received (an idle
# primary sends nothing new, so an old last-replay time is no lag), else the age of the last
# transaction it replayed. NULL on a server that is no standby.
_LAG = """
SELECT pg_is_in_recovery(),
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END
"""

_reading: contextvars.ContextVar[str | None] = contextvars.ContextVar("replica", default=None)
_forced_primary: contextvars.ContextVar[bool] = contextvars.ContextVar("primary", default=False)
_states: dict[str, tuple[float, bool, float | None]] = {}  # alias -> (checked at, usable, lag)
_states_lock = threading.Lock()
_turn = itertools.count()


def replica_aliases(config: Config) -> list[str]:
    """The Django database aliases of the configured replicas, registered on first use."""
    aliases = []
    for number, url in enumerate(config.database_replica_urls, start=1):
        alias = f"{ALIAS_PREFIX}{number}"
        wanted = replica_database_settings(url)
        known = connections.settings.get(alias)
        if known is None or any(known.get(key) != wanted[key]
                                for key in ("NAME", "USER", "PASSWORD", "HOST", "PORT")):
            # A replica configured after start-up (or changed): its alias follows the setting,
            # and a connection to what it named before is dropped.
            if known is not None:
                with contextlib.suppress(Exception):
                    connections[alias].close()
                with contextlib.suppress(AttributeError):
                    del connections[alias]
            connections.settings[alias] = connections.configure_settings(
                {DEFAULT_DB_ALIAS: connections.settings[DEFAULT_DB_ALIAS], alias: wanted})[alias]
            with _states_lock:
                _states.pop(alias, None)
        aliases.append(alias)
    return aliases


def replica_database_settings(url: str) -> dict[str, Any]:
    """A replica's DATABASES entry: the primary's options, a short connect timeout, and a test
    mirror of `default` (the test runner creates no database on a replica)."""
    entry = database_settings(url)
    entry["OPTIONS"] = {**entry["OPTIONS"], "connect_timeout": CONNECT_TIMEOUT_S}
    entry["TEST"] = {"MIRROR": DEFAULT_DB_ALIAS}
    return entry


def read_alias() -> str:
    """The database a search's statements read from now: a replica inside `replica_reads`
    when one was chosen, else the primary."""
    return _reading.get() or DEFAULT_DB_ALIAS


@contextlib.contextmanager
def primary_reads() -> Iterator[None]:
    """Searches in this block read from the primary (a caller that must see its own writes)."""
    token = _forced_primary.set(True)
    try:
        yield
    finally:
        _forced_primary.reset(token)


@contextlib.contextmanager
def replica_reads(config: Config) -> Iterator[str | None]:
    """Run the block's reads on a usable replica (its alias, or None: on the primary)."""
    alias = None if _forced_primary.get() or _reading.get() else replica_choose(config)
    if alias is None:
        yield None
        return
    token = _reading.set(alias)
    try:
        yield alias
    finally:
        _reading.reset(token)


def replica_choose(config: Config) -> str | None:
    """A replica that answers and lags at most RAG_REPLICA_MAX_LAG_SECONDS, taken in turn; None
    when there is none."""
    aliases = replica_aliases(config)
    if not aliases:
        return None
    start = next(_turn)
    for offset in range(len(aliases)):
        alias = aliases[(start + offset) % len(aliases)]
        if _usable(alias, config=config):
            return alias
    return None


def replica_failed(alias: str) -> None:
    """A replica that failed in use: skipped until its next check."""
    with _states_lock:
        _states[alias] = (time.monotonic(), False, None)
    with contextlib.suppress(Exception):
        connections[alias].close()


def replica_states(config: Config) -> list[dict[str, Any]]:
    """Each replica as checked now (for /health and the status page): its masked URL, whether
    searches use it, its lag in seconds."""
    states = []
    for alias, url in zip(replica_aliases(config), config.database_replica_urls):
        usable, lag = _check(alias, config=config)
        states.append({"url": url_password_mask(url), "usable": usable,
                       "lag_seconds": None if lag is None else round(lag, 3)})
    return states


def _usable(alias: str, *, config: Config) -> bool:
    with _states_lock:
        state = _states.get(alias)
    if state is not None:
        wait = config.rag_replica_check_seconds if state[1] else max(
            config.rag_replica_check_seconds, UNUSABLE_RECHECK_S)
        if time.monotonic() - state[0] < wait:
            return state[1]
    return _check(alias, config=config)[0]


def _check(alias: str, *, config: Config) -> tuple[bool, float | None]:
    lag = None
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(_LAG)
            in_recovery, lag = cursor.fetchone()
        lag = float(lag) if lag is not None else None
        # A server that is no standby (promoted, or the wrong URL) is not a replica to use.
        usable = bool(in_recovery) and lag is not None and lag <= config.rag_replica_max_lag_seconds
        if not usable:
            logger.warning("replica %s skipped: %s", alias,
                           "not a standby" if not in_recovery else f"{lag:.1f}s behind")
    except Exception as exc:  # any failure to reach it: skipped, never fatal
        usable = False
        logger.warning("replica %s skipped: %s", alias, type(exc).__name__)
        with contextlib.suppress(Exception):
            connections[alias].close()
    with _states_lock:
        _states[alias] = (time.monotonic(), usable, lag)
    return usable, lag


class ReplicaRouter:
    """Reads inside `replica_reads` go to its replica, everything else to the primary; only
    the primary is migrated."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        return read_alias()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # every alias holds the same data

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS
