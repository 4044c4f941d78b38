"""Limits on guessing: failed sign-ins are counted by django-axes (in PostgreSQL, so the limit
holds across every worker process; settings in localrag_site/settings.py), bad bearer tokens
here, per client address and minute, in the table `token_failures`."""

from __future__ import annotations

import ipaddress
import random
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.http import HttpRequest

from access import sql
from core.client_address import client_address
from core.config import Config, get_config
from core.db import db_errors_translated
from core.errors import LocalRagError

# One recorded failure in this many also drops the rows of past minutes: no scheduler needed.
PRUNE_EVERY = 100
USERNAME_MAX = 150  # Django's user names


class TooManyRequests(LocalRagError):
    code = "too_many_requests"


def axes_client_address(request: HttpRequest) -> str | None:
    """The address django-axes counts failed sign-ins by (its AXES_CLIENT_IP_CALLABLE); None
    for one that is no IP address (then only the account is counted)."""
    address = client_address(request, config=get_config())
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None


def axes_username(request: HttpRequest, credentials: dict[str, Any]) -> str:
    """The user name django-axes counts failures by (its AXES_USERNAME_CALLABLE), cut to the
    longest a user name can be: axes stores it in a 255-character column, and a longer one
    typed into a sign-in form would otherwise fail the request."""
    return str((credentials or {}).get("username") or "")[:USERNAME_MAX]


def token_guessing_check(*, address: str, config: Config) -> None:
    """Raise TooManyRequests (429, Retry-After: the rest of the minute) when `address` sent
    more than RAG_TOKEN_FAILURE_LIMIT bad tokens in this minute."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TOKEN_FAILURES_NOW, [address])
        row = cursor.fetchone()
    if row is not None and row[0] >= config.rag_token_failure_limit:
        retry_after = 60 - datetime.now(UTC).second
        raise TooManyRequests(
            f"too many bad API tokens from this address: at most "
            f"{config.rag_token_failure_limit} a minute (RAG_TOKEN_FAILURE_LIMIT); try again in "
            f"{retry_after} s", details={"limit_per_minute": config.rag_token_failure_limit},
            headers={"Retry-After": str(retry_after)})


def token_failure_record(*, address: str) -> None:
    """Count one bad token from `address` in this minute."""
    with db_errors_translated(), connection.cursor() as cursor:
        cursor.execute(sql.TOKEN_FAILURE_RECORD, [address])
        if random.randrange(PRUNE_EVERY) == 0:
            cursor.execute(sql.TOKEN_FAILURES_PAST_DELETE)
