"""`rag llm use` and `rag llm status`: switching the answers to a real model in one step, after
trying it, and saying which model answers now.

`llm_use` probes the server (answering/llm_probe.py: its models, one tiny completion, one tiny
stream) and only when all of it works writes LLM_PROVIDER=openai-compatible, LLM_BASE_URL,
LLM_MODEL and the key's settings into `.env` (ops/env_file.py keeps every other line, comment
and the order); the key itself is never written, only where it is (ops/llm_keys.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from answering.llm import llm_config_check, llm_key_needed
from answering.llm_health import LLMHealth, llm_health_probe, llm_key_label
from answering.llm_probe import (
    CompletionTried,
    ModelsListing,
    ProbeFailed,
    ProbeTarget,
    StreamTried,
    llm_completion_try,
    llm_model_check,
    llm_model_choose,
    llm_models_list,
    llm_stream_try,
    url_shown,
)
from core.config import Config, config_with
from core.errors import InvalidRequest
from embeddings.outbound import endpoint_host, endpoint_is_local
from ops.env_file import env_file_update
from ops.llm_keys import KEY_SETTINGS, KeyPlan, KeyRequest, key_plan
from ops.llm_presets import LLMTarget, llm_target_resolve
from ops.settings_audit import NOT_RECORDED, settings_change_audit

# What local-rag's own OpenAI-compatible endpoint (`rag serve`, conversations/openai_models.py)
# names as every model's owner: a server that answers with it is this software, not a model.
LOCAL_RAG_OWNER = "local-rag"
# A value .env holds as it is; any other is single-quoted (python-dotenv then reads it as is).
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_./:@%+,=~\[\]-]*")
_WRITTEN_IN_ORDER = ("LLM_PROVIDER", "LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY",
                     "LLM_API_KEY_ENV", "LLM_API_KEY_FILE", "LLM_API_KEY_REQUIRED")


@dataclass(frozen=True)
class LLMUseRequest:
    target: str  # a URL or a preset's name (ops/llm_presets.py)
    url: str = ""  # replaces a preset's URL
    model: str = ""  # empty: the server's only model
    key: KeyRequest = KeyRequest()
    dry_run: bool = False
    force: bool = False  # write even when the probe fails
    timeout_seconds: float | None = None  # of each probe request; None: LLM_TIMEOUT_SECONDS


@dataclass
class LLMUseReport:
    base_url: str
    preset: str | None
    model: str
    key: KeyPlan
    local: bool
    listing: ModelsListing | None = None
    completion: CompletionTried | None = None
    stream: StreamTried | None = None
    failure: ProbeFailed | None = None
    env_file: Path | None = None
    written: list[str] = field(default_factory=list)
    created: bool = False
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None

    def as_dict(self) -> dict[str, Any]:
        """The `--json` form: never the key, only where it is."""
        listing, completion, stream, failure = (self.listing, self.completion, self.stream,
                                                self.failure)
        return {
            "ok": self.ok, "dry_run": self.dry_run, "written": bool(self.written),
            "env_file": str(self.env_file) if self.env_file else None,
            "settings_written": self.written, "env_file_created": self.created,
            "provider": "openai-compatible", "base_url": url_shown(self.base_url),
            "preset": self.preset, "model": self.model or None,
            "key": {"source": self.key.source, "from": self.key.label or None,
                    "sent": bool(self.key.key)},
            "outbound": outbound_shown(self.base_url, local=self.local),
            "models": None if listing is None else {
                "ids": list(listing.ids), "total": listing.total,
                "latency_ms": listing.latency_ms},
            "completion": None if completion is None else {
                "latency_ms": completion.latency_ms, "text": completion.text},
            "stream": None if stream is None else {
                "ok": True, "first_text_ms": stream.first_text_ms,
                "latency_ms": stream.latency_ms, "deltas": stream.deltas},
            "error": None if failure is None else {
                "code": failure.code, "message": failure.message, "status": failure.status},
            "warnings": [*self.key.notes, *self.warnings],
        }


def llm_use(*, request: LLMUseRequest, config: Config) -> LLMUseReport:
    """Probe the server of `request` and, unless it fails (or `force`), write it into `.env`.
    Bad input raises (InvalidRequest, ConfigError, LLMConfigMissing) before any request is
    sent; the probe's failure is the report's `failure`, and then nothing is written."""
    target = llm_target_resolve(target=request.target, url=request.url)
    if not request.dry_run:
        _env_file_check(config)
    local = endpoint_is_local(target.base_url, config=config)
    plan = key_plan(request=request.key, config=config, target=target, local=local,
                    force=request.force)
    # The settings as they will read, checked now: nothing is sent for a configuration that
    # could not answer anyway.
    llm_config_check(config=_settings_applied(config, target=target,
                                              model=request.model or "-", plan=plan))
    report = LLMUseReport(base_url=target.base_url,
                          preset=target.preset.name if target.preset else None,
                          model=request.model, key=plan, local=local, dry_run=request.dry_run)
    probe = ProbeTarget(base_url=target.base_url, api_key=plan.key,
                        timeout_seconds=request.timeout_seconds or config.llm_timeout_seconds,
                        key_label=plan.label)
    try:
        _probe(report, probe=probe, target=target)
    except ProbeFailed as failure:
        report.failure = failure
    if (report.failure and not request.force) or request.dry_run:
        return report
    if not report.model:
        raise InvalidRequest("the server's models could not be listed, so --force needs "
                             "--model", details={"field": "model"})
    _write(report, config=config, target=target)
    return report


def _probe(report: LLMUseReport, *, probe: ProbeTarget, target: LLMTarget) -> None:
    report.listing = listing = llm_models_list(probe)
    if listing.ids and listing.owners == {LOCAL_RAG_OWNER}:
        raise ProbeFailed("llm_bad_response", f"{probe.shown_url} is local-rag's own "
                          "OpenAI-compatible endpoint (`rag serve`), not a model server")
    try:
        if report.model:
            llm_model_check(listing, model=report.model, target=probe)
        else:
            report.model = llm_model_choose(listing, target=probe)
    except ProbeFailed as failure:
        if failure.code == "llm_no_models" and target.preset is not None:
            failure.message += f": {target.preset.no_models_hint}"
        raise
    report.completion = completion = llm_completion_try(probe, model=report.model)
    report.stream = stream = llm_stream_try(probe, model=report.model,
                                            max_tokens=completion.max_tokens)
    if stream.deltas == 0 and completion.text.strip():
        raise ProbeFailed("llm_stream_broken", "the stream ended without any text, though the "
                          "same request without streaming had some")


def _write(report: LLMUseReport, *, config: Config, target: LLMTarget) -> None:
    desired = {"LLM_PROVIDER": "openai-compatible", "LLM_BASE_URL": target.base_url,
               "LLM_MODEL": report.model, **report.key.settings}
    values = {name: _env_value(name, desired[name]) for name in _WRITTEN_IN_ORDER
              if name in desired and desired[name] != _in_file(config, name)}
    written = env_file_update(config=config, values=values) if values else None
    report.env_file = written[0] if written else config.env_file
    report.created = bool(written and written[1])
    report.written = list(values)
    if written and not settings_change_audit(env_file=written[0],
                                             values={name: desired[name] for name in values}):
        report.warnings.append(NOT_RECORDED)
    for name in desired:
        # The environment outranks .env (core/config.py): a value there keeps winning. (The
        # key settings' own conflicts were refused by the key plan.)
        if (name not in KEY_SETTINGS and config.sources.get(name) == "env"
                and config.raw.get(name) != desired[name]):
            report.warnings.append(f"{name} is set in this environment ({config.raw[name]}), "
                                   "which outranks .env: unset it for the new setting to apply")


def _in_file(config: Config, name: str) -> str:
    """What the env file holds for `name` now, as the configuration read it ("" for nothing);
    LLM_API_KEY_REQUIRED reads as its default when absent."""
    if config.sources.get(name) == ".env":
        return config.raw[name]
    return "true" if name == "LLM_API_KEY_REQUIRED" else ""


def _env_value(name: str, value: str) -> str:
    if _PLAIN_VALUE.fullmatch(value):
        return value
    if "'" in value or "\n" in value or "\r" in value:
        raise InvalidRequest(f"{name} cannot be written to .env as it is (a quote or a line "
                             "break in it)", details={"field": name})
    return f"'{value}'"


def _settings_applied(config: Config, *, target: LLMTarget, model: str, plan: KeyPlan) -> Config:
    """`config` as it will read once the new settings are written (values the environment
    sets outrank .env, as at start-up)."""
    desired = {"LLM_PROVIDER": "openai-compatible", "LLM_BASE_URL": target.base_url,
               "LLM_MODEL": model, **plan.settings}
    applied = {name: config.raw[name] if config.sources.get(name) == "env" else value
               for name, value in desired.items() if name != "LLM_PROVIDER"}
    applied["LLM_API_KEY"] = plan.key
    return config_with(config, LLM_PROVIDER="openai-compatible", **applied)


def _env_file_check(config: Config) -> None:
    if config.env_file is None:
        raise InvalidRequest("there is no .env to write: run this in the project's folder, or "
                             "name the file with `rag --env-file PATH llm use ...`",
                             details={"field": "env_file"})
    if config.env_file.name == ".env.sample":
        raise InvalidRequest("the configuration is read from .env.sample, a template that "
                             "holds no installation's settings: name the file with "
                             "`rag --env-file PATH llm use ...`", details={"field": "env_file"})


def outbound_shown(url: str, *, local: bool) -> dict[str, Any]:
    """Whether text sent to the LLM server leaves this machine (embeddings/outbound.py)."""
    return {"local": local, "host": endpoint_host(url)}


# --- status --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LLMStatusReport:
    provider: str
    base_url: str
    model: str
    key_set: bool
    key_needed: bool
    key_from: str  # where the key comes from ("$OPENAI_API_KEY", "LLM_API_KEY"); "" unset
    key_source: str | None  # the setting it came through: LLM_API_KEY_ENV, env, .env, ...
    health: LLMHealth
    outbound: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        remote = self.provider == "openai-compatible"
        health = self.health
        return {
            "provider": self.provider,
            "base_url": url_shown(self.base_url) if remote else None,
            "model": self.model,
            "key": {"set": self.key_set, "needed": self.key_needed, "from": self.key_from or None,
                    "source": self.key_source} if remote else None,
            "server": {**health.as_dict(), "message": health.message or None,
                       "models_total": health.models_total},
            "outbound": self.outbound,
        }


def llm_status(*, config: Config, timeout_seconds: float | None = None) -> LLMStatusReport:
    """Which provider answers now, whether its key is set and where from, and whether its
    server answers (probed live; a provider of this process is `local`)."""
    remote = config.llm_provider == "openai-compatible"
    health = llm_health_probe(config=config,
                              timeout_seconds=timeout_seconds or config.llm_timeout_seconds)
    source = config.sources.get("LLM_API_KEY") if config.llm_api_key else None
    return LLMStatusReport(
        provider=config.llm_provider, base_url=config.llm_base_url, model=health.model,
        key_set=bool(config.llm_api_key), key_needed=remote and llm_key_needed(config=config),
        key_from=llm_key_label(config) or (f"${config.llm_api_key_env}"
                                           if config.llm_api_key_env else ""),
        key_source=source, health=health,
        outbound=outbound_shown(config.llm_base_url,
                                local=endpoint_is_local(config.llm_base_url, config=config))
        if remote else None)
