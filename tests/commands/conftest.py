"""Fixtures of the command tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import config_use, get_config
from tests.commands.llm_support import ENV_TEXT, EnvLoader, config_read


@pytest.fixture
def llm_env_file(tmp_path: Path) -> Iterator[EnvLoader]:
    """`load(text, **environ)`: write `text` (unless None) into the test's `.env`, read the
    configuration from it and `environ` (as the OS environment) and use it; returns the file."""
    base = get_config()
    path = tmp_path / ".env"

    def load(text: str | None = ENV_TEXT, **environ: str) -> Path:
        if text is not None:
            path.write_text(text)
        config_use(config_read(path, **environ))
        return path

    yield load
    config_use(base)
