"""The LLM's health as /health, the status page and `rag llm status` show it: for
openai-compatible, whether the server lists its models (and among them the configured one) within
a short timeout; for any other provider, `local`, without a probe (it runs in this process).

/health is called every few seconds by load balancers, so its result is cached per process for
HEALTH_TTL_SECONDS, per provider, URL, model and key: the LLM server gets one request a minute
per process, and the list spends no tokens. The probe runs in a thread of its own: a caller
waits at most HEALTH_PROBE_TIMEOUT_SECONDS and a little more (a host name's lookup is bounded
by no socket timeout), then has the last result, or `down` with `llm_timeout`; the thread keeps
its result when it ends. A caller finding a stale result while another probe runs takes the
stale one at once.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from answering.llm import LLMConfigMissing, llm_config_check, llm_model_name
from answering.llm_probe import (
    ProbeFailed,
    ProbeTarget,
    llm_model_check,
    llm_models_list,
)
from core.config import Config
from core.db import connection_released

HEALTH_TTL_SECONDS = 60.0
HEALTH_PROBE_TIMEOUT_SECONDS = 2.0
_WAIT_MARGIN_SECONDS = 0.5
_SLOTS_KEPT = 16  # configurations remembered (a process has one; tests have many)


@dataclass(frozen=True)
class LLMHealth:
    provider: str
    model: str
    status: str  # up, down or local
    latency_ms: int | None = None  # of the models list, when up
    error: str | None = None  # a probe's code (answering/llm_probe.py) or llm_config_missing
    checked_at: datetime | None = None  # None: not probed (local)
    message: str = ""  # what the error says, with what to do: for operators, not for /health
    models_total: int | None = None

    @property
    def error_code(self) -> str | None:
        """The error under the name the other providers' probes give it (ops/provider_health.py),
        so the status page reads them alike."""
        return self.error

    def as_dict(self) -> dict[str, Any]:
        """What /health's details say of the LLM."""
        return {"provider": self.provider, "model": self.model, "status": self.status,
                "latency_ms": self.latency_ms, "error": self.error,
                "checked_at": self.checked_at.isoformat() if self.checked_at else None}


def llm_key_label(config: Config) -> str:
    """Where the LLM's key comes from, for messages (never the key): "$OPENAI_API_KEY", "the
    key file /etc/llm.key", "LLM_API_KEY"; "" when no key is set."""
    if not config.llm_api_key:
        return ""
    source = config.sources.get("LLM_API_KEY", "")
    if source == "LLM_API_KEY_ENV":
        return f"${config.llm_api_key_env}"
    if source == "LLM_API_KEY_FILE":
        return f"the key file {config.llm_api_key_file}"
    return "LLM_API_KEY"


def llm_health_probe(*, config: Config, timeout_seconds: float) -> LLMHealth:
    """The LLM's health now, probed live (not cached)."""
    provider, model = config.llm_provider, config.llm_model
    if provider != "openai-compatible":
        # The answerer's own name (the extractive one's version), as traces give it.
        model = llm_model_name(config=config).removeprefix(f"{provider}/")
        return LLMHealth(provider=provider, model=model, status="local")
    checked_at = datetime.now(UTC)
    try:
        llm_config_check(config=config)
    except LLMConfigMissing as exc:
        return LLMHealth(provider=provider, model=model, status="down", error=exc.code,
                         checked_at=checked_at, message=exc.message)
    target = ProbeTarget(base_url=config.llm_base_url, api_key=config.llm_api_key,
                         timeout_seconds=timeout_seconds, key_label=llm_key_label(config))
    try:
        listing = llm_models_list(target)
        llm_model_check(listing, model=model, target=target)
    except ProbeFailed as failure:
        return LLMHealth(provider=provider, model=model, status="down", error=failure.code,
                         checked_at=checked_at, message=failure.message)
    return LLMHealth(provider=provider, model=model, status="up",
                     latency_ms=listing.latency_ms, checked_at=checked_at,
                     models_total=listing.total)


@dataclass
class _Slot:
    """One configuration's last result, and the probe running for it, if any."""

    result: LLMHealth | None = None
    probed_at: float = 0.0  # time.monotonic() of the result
    probe: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)


_slots: dict[tuple[str, ...], _Slot] = {}
_lock = threading.Lock()


def llm_health(*, config: Config, ttl_seconds: float = HEALTH_TTL_SECONDS) -> LLMHealth:
    """The LLM's health, probed at most once per `ttl_seconds` per process (see the module)."""
    if config.llm_provider != "openai-compatible":
        return llm_health_probe(config=config, timeout_seconds=HEALTH_PROBE_TIMEOUT_SECONDS)
    key = _slot_key(config)
    with _lock:
        slot = _slots.setdefault(key, _Slot())
        _slots_trim()
        if slot.result is not None and time.monotonic() - slot.probed_at < ttl_seconds:
            return slot.result
        if slot.probe is not None:
            if slot.result is not None:
                return slot.result  # another caller's probe is under way
        else:
            slot.done = threading.Event()
            slot.probe = threading.Thread(target=_probe_into, args=(slot, config),
                                          name="llm-health-probe", daemon=True)
            slot.probe.start()
        done = slot.done
    # Waiting on the LLM server: no database connection is held meanwhile.
    with connection_released():
        done.wait(HEALTH_PROBE_TIMEOUT_SECONDS + _WAIT_MARGIN_SECONDS)
    with _lock:
        if slot.result is not None:
            return slot.result
    return LLMHealth(provider=config.llm_provider, model=config.llm_model, status="down",
                     error="llm_timeout", checked_at=datetime.now(UTC),
                     message=f"the LLM server did not answer within "
                             f"{HEALTH_PROBE_TIMEOUT_SECONDS:g}s")


def llm_health_cache_clear() -> None:
    """Forget every cached result (a probe under way still keeps its own when it ends)."""
    with _lock:
        _slots.clear()


def _probe_into(slot: _Slot, config: Config) -> None:
    try:
        result = llm_health_probe(config=config, timeout_seconds=HEALTH_PROBE_TIMEOUT_SECONDS)
    except Exception as exc:  # a bug must not leave the slot probing for ever
        result = LLMHealth(provider=config.llm_provider, model=config.llm_model, status="down",
                           error="llm_upstream_error", checked_at=datetime.now(UTC),
                           message=f"the probe failed ({type(exc).__name__})")
    with _lock:
        slot.result, slot.probed_at, slot.probe = result, time.monotonic(), None
        slot.done.set()


def _slot_key(config: Config) -> tuple[str, ...]:
    # A digest of the key, kept in memory only: a new key is a new configuration to probe.
    digest = hashlib.sha256(config.llm_api_key.encode()).hexdigest()[:16]
    return (config.llm_provider, config.llm_base_url, config.llm_model, digest,
            str(config.llm_api_key_required), ",".join(sorted(config.rag_outbound_local_hosts)))


def _slots_trim() -> None:
    while len(_slots) > _SLOTS_KEPT:
        del _slots[next(iter(_slots))]
