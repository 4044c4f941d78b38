"""What the tests of `rag llm use` and `rag llm status` share (their fixture `llm_env_file` is
in tests/commands/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.config import Config, config_load
from tests.harness import ROOT

KEY = "sk-LLMSWITCH-secret-73ac15"
ENV_TEXT = """# My installation: keep this comment.
RAG_TOP_K=4
LLM_PROVIDER=fake
# the model of the fake
LLM_MODEL=fake-local
LLM_API_KEY=
RAG_TRACE_TEXT=true
"""

EnvLoader = Callable[..., Path]


def config_read(path: Path, **environ: str) -> Config:
    return config_load(environ=environ, start_dir=ROOT, env_file=path)


def env_values(path: Path) -> dict[str, str]:
    """NAME -> value of each assignment line of an env file."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines()
                if line and not line.startswith("#"))
