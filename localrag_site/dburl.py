"""DATABASE_URL parsing into Django's DATABASES entry and libpq conninfo."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit


def database_settings(url: str) -> dict:
    """Django DATABASES entry for a postgresql:// URL (a `?host=/dir` query names a socket dir)."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    host = query.get("host", [parts.hostname or ""])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database_name(url),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or ""),
        # Reuse connections between requests (checked before reuse); /ask closes its connection
        # explicitly before waiting on the LLM.
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {"connect_timeout": 5},
    }


def database_name(url: str) -> str:
    return unquote(urlsplit(url).path.lstrip("/"))
