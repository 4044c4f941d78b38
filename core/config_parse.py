"""How the settings table (core/settings_table.py) reads one variable: each parser turns its text
into the typed value `Config` holds, or raises ConfigError naming the variable.

A parser's bounds are part of it (`Integer(1, 20)`), so a rule about one setting is written once,
beside the setting. Rules that involve several settings are functions in core/config.py.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

from core.dburl import database_url_valid, url_password_mask
from core.errors import LocalRagError

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FALSE = {"0", "false", "no", "off"}


class ConfigError(LocalRagError):
    """A setting that is missing or invalid; `variable` names it."""

    code = "invalid_config"

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message, details={"variable": variable})
        self.variable = variable


class Parser(ABC, Generic[T]):
    """Reads one variable's text (never empty where the setting has a default)."""

    @abstractmethod
    def parse(self, name: str, text: str, *, base: Path) -> T:
        """The value of variable `name`; `base` is the folder relative paths start from."""

    def shown(self, text: str) -> str:
        """The text `rag config` prints for a setting that is not secret."""
        return text


def one_of(name: str, text: str, choices: tuple[str, ...]) -> str:
    """`text` when it is one of `choices`."""
    if text not in choices:
        raise ConfigError(f"{name}={text!r} is not supported; use one of "
                          f"{', '.join(choices)}", variable=name)
    return text


@dataclass(frozen=True)
class Choice(Parser[str]):
    choices: tuple[str, ...]

    def parse(self, name: str, text: str, *, base: Path) -> str:
        return one_of(name, text, self.choices)


@dataclass(frozen=True)
class Integer(Parser[int]):
    """An integer in low..high (no upper bound when `high` is None). `message` words the
    out-of-bounds error where "NAME=value is outside low..high" would not say it best."""

    low: int
    high: int | None = None
    message: str = "{name}={value} is outside {low}..{high}"

    def parse(self, name: str, text: str, *, base: Path) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"{name}={text!r} is not an integer", variable=name) from None
        if value < self.low or (self.high is not None and value > self.high):
            raise ConfigError(self.message.format(name=name, value=value, low=self.low,
                                                  high=self.high), variable=name)
        return value


@dataclass(frozen=True)
class Number(Parser[float]):
    """A finite number from `low` (excluded when `low_open`) up to `high` (None: no bound)."""

    low: float
    high: float | None = None
    low_open: bool = False
    message: str = "{name} must be between {low} and {high}"

    def parse(self, name: str, text: str, *, base: Path) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{name}={text!r} is not a number", variable=name) from None
        above_low = value > self.low if self.low_open else value >= self.low
        if not (math.isfinite(value) and above_low
                and (self.high is None or value <= self.high)):
            raise ConfigError(self.message.format(name=name, low=self.low, high=self.high),
                              variable=name)
        return value


# A duration, a size or any other quantity that must be greater than 0.
POSITIVE = Number(0, low_open=True, message="{name} must be greater than 0")


@dataclass(frozen=True)
class Flag(Parser[bool]):
    def parse(self, name: str, text: str, *, base: Path) -> bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ConfigError(f"{name}={text!r} is not a boolean (true/false)", variable=name)


@dataclass(frozen=True)
class OrNone(Parser[Any]):
    """None while the variable is unset (its default is empty), else what `inner` reads: the
    code then uses a value derived elsewhere, e.g. the embedding provider's."""

    inner: Parser[Any]

    def parse(self, name: str, text: str, *, base: Path) -> Any:
        return self.inner.parse(name, text, base=base) if text.strip() else None


def _as_is(text: str) -> str:
    return text


@dataclass(frozen=True)
class Text(Parser[str]):
    """Free text, tidied by `tidy` (e.g. `str.strip`)."""

    tidy: Callable[[str], str] = _as_is

    def parse(self, name: str, text: str, *, base: Path) -> str:
        return self.tidy(text)


@dataclass(frozen=True)
class OneLine(Parser[str]):
    max_chars: int

    def parse(self, name: str, text: str, *, base: Path) -> str:
        value = text.strip()
        if "\n" in value or "\r" in value or len(value) > self.max_chars:
            raise ConfigError(f"{name} must be one line of at most {self.max_chars} characters",
                              variable=name)
        return value


@dataclass(frozen=True)
class HeaderText(Parser[str]):
    """A key or token sent in an HTTP header, which only carries printable ASCII."""

    strip: bool = False

    def parse(self, name: str, text: str, *, base: Path) -> str:
        if text and not (text.isascii() and text.isprintable()):
            raise ConfigError(f"{name} contains characters an HTTP header cannot carry "
                              "(non-ASCII or control characters); check how it was copied",
                              variable=name)
        return text.strip() if self.strip else text


@dataclass(frozen=True)
class VariableName(Parser[str]):
    """The name of an environment variable, other than the `refused` ones."""

    refused: tuple[str, ...] = ()

    def parse(self, name: str, text: str, *, base: Path) -> str:
        value = text.strip()
        # The text is not quoted back: a key pasted here by mistake must not reach a message.
        if value and not _VARIABLE_NAME.fullmatch(value):
            raise ConfigError(f"{name} must be the name of an environment variable (letters, "
                              "digits and _), not the key itself", variable=name)
        if value in self.refused:
            raise ConfigError(f"{name} names {value}, which is read as it is: set {value} "
                              "itself, or name another variable", variable=name)
        return value


@dataclass(frozen=True)
class SigningKey(Parser[str]):
    """Empty (`rag serve` then makes one) or long enough to sign sessions."""

    min_chars: int

    def parse(self, name: str, text: str, *, base: Path) -> str:
        if text and len(text) < self.min_chars:
            raise ConfigError(f"{name} must be at least {self.min_chars} characters: it signs "
                              "the workbench's sessions (leave it empty and `rag serve` makes "
                              "one)", variable=name)
        return text


@dataclass(frozen=True)
class Folder(Parser[Path]):
    """A path; `resolved`: joined to the project root (an absolute path stays as it is)."""

    resolved: bool = False

    def parse(self, name: str, text: str, *, base: Path) -> Path:
        path = Path(text).expanduser()
        return base / path if self.resolved else path


@dataclass(frozen=True)
class Items(Parser[tuple[str, ...]]):
    """Comma-separated items, blank ones left out."""

    def parse(self, name: str, text: str, *, base: Path) -> tuple[str, ...]:
        return tuple(item.strip() for item in text.split(",") if item.strip())


@dataclass(frozen=True)
class HostSet(Parser[frozenset[str]]):
    """Comma-separated host names, compared in lower case and without IPv6 brackets."""

    def parse(self, name: str, text: str, *, base: Path) -> frozenset[str]:
        return frozenset(host.strip().strip("[]").lower() for host in text.split(",")
                         if host.strip())


@dataclass(frozen=True)
class HttpUrls(Parser[tuple[str, ...]]):
    """Comma-separated http(s) URLs with a host, no two alike, without a trailing slash."""

    def parse(self, name: str, text: str, *, base: Path) -> tuple[str, ...]:
        urls = tuple(dict.fromkeys(url.strip().rstrip("/") for url in text.split(",")
                                   if url.strip()))
        for url in urls:
            if not http_url(url):
                shown = endpoint_origin(url) or "a value"
                raise ConfigError(f"{name} holds {shown}, which is not an http(s):// URL with "
                                  "a host", variable=name)
        return urls


@dataclass(frozen=True)
class DatabaseUrl(Parser[str]):
    def parse(self, name: str, text: str, *, base: Path) -> str:
        if not database_url_valid(text):
            raise ConfigError(f"{name} must be a postgresql://user:password@host:port/database "
                              "URL", variable=name)
        return text

    def shown(self, text: str) -> str:
        return url_password_mask(text)


@dataclass(frozen=True)
class DatabaseUrls(Parser[tuple[str, ...]]):
    """Comma-separated database URLs (none by default)."""

    def parse(self, name: str, text: str, *, base: Path) -> tuple[str, ...]:
        urls = Items().parse(name, text, base=base)
        for url in urls:
            if not database_url_valid(url):
                raise ConfigError(f"{name} must hold postgresql://user:password@host:port/"
                                  f"database URLs; one is {url_password_mask(url)!r}",
                                  variable=name)
        return urls

    def shown(self, text: str) -> str:
        return ",".join(url_password_mask(url.strip()) for url in text.split(",")
                        if url.strip())


def http_url(url: str) -> bool:
    """Whether `url` is an http(s) URL with a host (and a port, if any, that is a number)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def endpoint_shown(url: str) -> str:
    """scheme://host[:port]/path of an endpoint, for messages and pages: never a user, a
    password or a query string (any may carry a key); an IPv6 host in brackets."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def endpoint_origin(url: str) -> str | None:
    """scheme://host[:port] of an endpoint, for messages and pages: never a user, password,
    path or query string (any may carry a key). "" without a scheme or host; None when it
    cannot be read as a URL at all."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return ""
    return f"{parts.scheme}://{parts.hostname}{port}"
