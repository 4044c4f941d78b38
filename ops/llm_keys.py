"""What `rag llm use` does about the LLM's key: which key settings it writes into `.env` (only
references: the name of a variable, or a file's path; never a key), the key the probe sends,
and how messages name it.

A key is never sent to a server it was not given for: without --key-env, --key-file or
--no-key, a key that `.env` names is kept only for the server it was set up with (the same
scheme, host and port), and `rag llm use` asks which key a new server gets. Settings given by
the environment are the operator's own and stay as they are; one that would contradict the
choice (LLM_API_KEY exported beside --key-file) is refused rather than silently winning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from answering.llm_health import llm_key_label
from core.config import Config, endpoint_origin, key_reference_read
from core.config_parse import VariableName
from core.errors import InvalidRequest
from ops.llm_presets import LLMTarget

KEY_SETTINGS = ("LLM_API_KEY", "LLM_API_KEY_ENV", "LLM_API_KEY_FILE")


@dataclass(frozen=True)
class KeyRequest:
    """The key options of `rag llm use`: at most one of them."""

    key_env: str = ""  # the variable that holds the key
    key_file: str = ""  # the file that holds the key (relative to the current folder)
    no_key: bool = False


@dataclass(frozen=True)
class KeyPlan:
    # Desired values of LLM_API_KEY, LLM_API_KEY_ENV, LLM_API_KEY_FILE and LLM_API_KEY_REQUIRED
    # in `.env`, all four, or none where the key settings stay as they are.
    settings: dict[str, str]
    key: str = field(repr=False)  # what the probe sends; "" for none
    label: str  # how messages name it ("$OPENAI_API_KEY"); "" for none
    source: str  # none, variable, file, environment or kept
    notes: tuple[str, ...] = ()


def key_plan(*, request: KeyRequest, config: Config, target: LLMTarget, local: bool,
             force: bool = False) -> KeyPlan:
    """The key plan of `rag llm use` for `target`; InvalidRequest or ConfigError (a key file
    that cannot be trusted) when the options cannot be carried out."""
    from_environment = [name for name in KEY_SETTINGS if config.sources.get(name) == "env"]
    if request.no_key:
        return _no_key(config=config, target=target, local=local,
                       from_environment=from_environment)
    if request.key_env:
        return _from_variable(request.key_env, config=config, force=force,
                              from_environment=from_environment)
    if request.key_file:
        path = str(Path(request.key_file).expanduser().resolve())
        _environment_conflict(from_environment, allowed=(), option="--key-file")
        key = key_reference_read(config=config, setting="LLM_API_KEY_FILE", reference=path)
        return KeyPlan(settings=_settings(file=path), key=key, label=f"the key file {path}",
                       source="file")
    configured = bool(config.llm_api_key or config.llm_api_key_env or config.llm_api_key_file)
    if configured:
        return _kept(config=config, target=target, from_environment=from_environment)
    preset = target.preset
    if preset is not None and preset.key_env:
        return _from_variable(preset.key_env, config=config, force=force,
                              from_environment=from_environment, preset=preset.name)
    return _no_key(config=config, target=target, local=local, from_environment=[])


def _settings(*, variable: str = "", file: str = "", required: bool = True) -> dict[str, str]:
    return {"LLM_API_KEY": "", "LLM_API_KEY_ENV": variable, "LLM_API_KEY_FILE": file,
            "LLM_API_KEY_REQUIRED": "true" if required else "false"}


def _no_key(*, config: Config, target: LLMTarget, local: bool,
            from_environment: list[str]) -> KeyPlan:
    if not local:
        origin = endpoint_origin(target.base_url)
        raise InvalidRequest(
            f"{origin} is outside this machine, so it needs a key: name where it is with "
            "--key-env VAR or --key-file PATH (a server of your own that takes none: list its "
            "host in RAG_OUTBOUND_LOCAL_HOSTS first)", details={"field": "key"})
    _environment_conflict(from_environment, allowed=(), option="--no-key")
    return KeyPlan(settings=_settings(required=False), key="", label="", source="none")


def _from_variable(variable: str, *, config: Config, force: bool, from_environment: list[str],
                   preset: str = "") -> KeyPlan:
    name = VariableName().parse("--key-env", variable, base=Path())
    if name == "LLM_API_KEY":
        # The key exported as LLM_API_KEY itself: it is read as it is, and `.env` names none.
        if "LLM_API_KEY" not in from_environment:
            raise InvalidRequest("LLM_API_KEY is not set in this environment",
                                 details={"field": "key_env"})
        _environment_conflict(from_environment, allowed=("LLM_API_KEY",), option="--key-env")
        return KeyPlan(settings=_settings(), key=config.llm_api_key, label="LLM_API_KEY",
                       source="environment")
    _environment_conflict(from_environment, allowed=(), option="--key-env")
    key = key_reference_read(config=config, setting="LLM_API_KEY_ENV", reference=name)
    notes: tuple[str, ...] = ()
    if not key:
        whose = f"the {preset} preset reads the key from ${name}, which" if preset else (
            f"${name}")
        if not force:
            raise InvalidRequest(f"{whose} is not set in this environment: export it first "
                                 "(`.env` will name the variable, never hold the key), or pass "
                                 "--key-env VAR / --key-file PATH", details={"field": "key_env"})
        notes = (f"${name} is not set here: probed without a key",)
    return KeyPlan(settings=_settings(variable=name), key=key, label=f"${name}",
                   source="variable", notes=notes)


def _kept(*, config: Config, target: LLMTarget, from_environment: list[str]) -> KeyPlan:
    """The key settings as they are: those of the environment, or those `.env` has for this
    same server."""
    label = llm_key_label(config)
    in_file = [name for name in KEY_SETTINGS
               if config.sources.get(name) == ".env" and config.raw.get(name)]
    if not in_file:
        return KeyPlan(settings={}, key=config.llm_api_key, label=label, source="environment",
                       notes=(f"the key comes from this environment ({label or 'not set'})",))
    same_server = (config.llm_provider == "openai-compatible"
                   and endpoint_origin(config.llm_base_url) == endpoint_origin(target.base_url))
    if not same_server:
        raise InvalidRequest(
            f".env sets {', '.join(in_file)} for another server; say which key "
            f"{endpoint_origin(target.base_url)} gets: --key-env VAR, --key-file PATH, or "
            "--no-key (a key is never sent to a server it was not given for)",
            details={"field": "key"})
    return KeyPlan(settings={}, key=config.llm_api_key, label=label, source="kept")


def _environment_conflict(from_environment: list[str], *, allowed: tuple[str, ...],
                          option: str) -> None:
    others = [name for name in from_environment if name not in allowed]
    if others:
        raise InvalidRequest(f"{', '.join(others)} is set in this environment and would "
                             f"override {option}: unset it first", details={"field": "key"})

