"""The LLM servers `rag llm use` knows by name: where each listens by default, where its key
is read from by default, and what to do when it serves no model yet (docs/llm.md has one
section per preset)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.config_parse import http_url
from core.errors import InvalidRequest


@dataclass(frozen=True)
class LLMPreset:
    name: str
    title: str
    base_url: str
    no_models_hint: str  # what to do when the server serves no model
    key_env: str = ""  # the variable the key is read from unless told otherwise; "": no key


PRESETS: tuple[LLMPreset, ...] = (
    LLMPreset("ollama", "Ollama", "http://127.0.0.1:11434/v1",
              "pull one first, e.g. `ollama pull qwen2.5:0.5b`"),
    LLMPreset("llamacpp", "llama.cpp server", "http://127.0.0.1:8080/v1",
              "start it with a model: `llama-server -m MODEL.gguf`"),
    LLMPreset("vllm", "vLLM", "http://127.0.0.1:8000/v1",
              "start it with a model: `vllm serve MODEL --port 8000` (rag serve's default port "
              "is 8000 too: give one of them another)"),
    LLMPreset("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1",
              "load a model in LM Studio (Developer tab) or with `lms load MODEL`"),
    LLMPreset("openai", "OpenAI", "https://api.openai.com/v1",
              "check that the account may use models", key_env="OPENAI_API_KEY"),
)
PRESETS_BY_NAME: Mapping[str, LLMPreset] = {preset.name: preset for preset in PRESETS}


@dataclass(frozen=True)
class LLMTarget:
    base_url: str  # without a trailing slash
    preset: LLMPreset | None


def llm_target_resolve(*, target: str, url: str = "") -> LLMTarget:
    """The server `rag llm use TARGET [--url URL]` means: a URL, or a preset's name, whose
    URL `url` replaces (the same server on another host or port)."""
    text = target.strip()
    preset = PRESETS_BY_NAME.get(text.lower())
    if preset is None and "://" not in text:
        raise InvalidRequest(f"{text!r} is neither a URL (http://HOST:PORT/v1) nor a preset: "
                             f"{', '.join(PRESETS_BY_NAME)}", details={"field": "target"})
    if preset is None and url:
        raise InvalidRequest("--url goes with a preset; give the URL itself instead",
                             details={"field": "url"})
    base_url = (url or (preset.base_url if preset else text)).strip().rstrip("/")
    if not http_url(base_url):
        raise InvalidRequest("the server's URL must be http(s)://HOST[:PORT][/PATH], e.g. "
                             "http://127.0.0.1:11434/v1", details={"field": "url"})
    return LLMTarget(base_url=base_url, preset=preset)
