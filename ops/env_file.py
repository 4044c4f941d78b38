"""Settings the software writes into `.env` itself: the embedded database's URLs (`rag pg`), the
key that signs sessions (`rag serve`), and the first `.env` of a new checkout (`rag config
--create-env`, which `make demo` runs). The file is rewritten atomically with mode 0600; a
missing one is made from `.env.sample` first."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

from core.config import Config, config_with
from ops.pg_auth import private_file_write


def env_file_update(*, config: Config, values: Mapping[str, str]) -> tuple[Path, bool] | None:
    """Set `values` (name -> value) in the configuration's env file: (its path, whether it was
    created), or None without one (no project root)."""
    if config.env_file is None:
        return None
    env_file = config.env_file.resolve()
    created = not env_file.exists()
    if created:
        sample = config.project_root / ".env.sample" if config.project_root else None
        text = sample.read_text(encoding="utf-8") if sample and sample.is_file() else ""
    else:
        text = env_file.read_text(encoding="utf-8")
    for key, value in values.items():
        pattern = re.compile(rf"^{key}=.*$", re.MULTILINE)
        if pattern.search(text):
            text = pattern.sub(_as_is(f"{key}={value}"), text)
        else:
            text = text.rstrip("\n") + f"\n{key}={value}\n"
    private_file_write(env_file, text)
    return env_file, created


def env_file_create(*, config: Config, values: Mapping[str, str]) -> Path | None:
    """Make the configuration's env file from `.env.sample` with `values` (name -> value, each
    checked as a setting first: ConfigError names the one at fault); its path, or None when it
    already exists (it is never changed) or there is none to make (no project root)."""
    config_with(config, **values)
    if config.env_file is None or config.env_file.exists():
        return None
    written = env_file_update(config=config, values=values)
    return written[0] if written else None


def _as_is(line: str) -> Callable[[re.Match[str]], str]:
    """A re.sub replacement inserting `line` as it is: a password's backslashes stay."""
    return lambda _match: line


def secret_key_persist(*, config: Config, key: str) -> Path | None:
    """Keep `key` as RAG_SECRET_KEY in `.env`; the file's path, or None where there is no
    `.env` of this installation to keep it in (none found, or the checkout's `.env.sample`,
    which is a template and never holds a secret)."""
    if config.env_file is None or config.env_file.name == ".env.sample":
        return None
    written = env_file_update(config=config, values={"RAG_SECRET_KEY": key})
    return written[0] if written else None
