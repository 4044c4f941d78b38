"""Database URLs in one place: validation, Django's DATABASES entry, the database name, a
different port, and the URL with its password masked for messages."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit


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
        # Reuse connections between requests (checked before reuse); /ask hands its connection
        # back while it waits on the LLM (core.db.connection_released).
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {"connect_timeout": 5},
    }


def database_name(url: str) -> str:
    return unquote(urlsplit(url).path.lstrip("/"))


def database_url_valid(url: str) -> bool:
    """A postgres:// or postgresql:// URL with a usable port (if any) and a database name."""
    parts = urlsplit(url)
    try:
        _ = parts.port  # read for its check: ValueError for a port not a number in range
    except ValueError:
        return False
    return parts.scheme in ("postgres", "postgresql") and bool(parts.path.strip("/"))


def url_with_port(url: str, port: int) -> str:
    """`url` pointing at `port` (the host kept, localhost when it has none)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)
    userinfo = f"{host[0]}@" if len(host) == 2 else ""
    hostname = parts.hostname or "localhost"
    return urlunsplit(parts._replace(netloc=f"{userinfo}{hostname}:{port}"))


def url_password_mask(url: str) -> str:
    """Replace the password inside a URL with `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    userinfo = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{userinfo}:***@{netloc[1]}"))
