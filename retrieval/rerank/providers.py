"""The one table of rerank providers, and what reads it: settings check, dispatch, status.

RAG_RERANK names a row of `RERANKERS`; its values are core.config.RERANK_PROVIDERS, and a test
keeps the two equal. Adding a provider means adding one row here (and its name there). Building
the cross-encoder imports torch; nothing else here does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.config import Config, ConfigError
from core.errors import LocalRagError
from retrieval.rerank.base import RerankCandidate, RerankedCandidate, Reranker, unscored
from retrieval.rerank.cross_encoder import cross_encoder_reranker, cross_encoder_status
from retrieval.rerank.features import FeaturesReranker
from retrieval.rerank.remote import openai_compatible_reranker


class RerankConfigMissing(LocalRagError):
    code = "rerank_config_missing"


@dataclass(frozen=True)
class RerankerSpec:
    """One rerank provider: the settings it needs and how to build and check it."""

    name: str
    # Variables that must be set (non-empty); each is read from the Config field of the same
    # name in lower case (RERANK_MODEL -> config.rerank_model).
    settings: tuple[str, ...]
    loads_model: bool  # runs a model inside each serving process
    build: Callable[..., Reranker]  # build(config=...)
    # check(config=...) -> "ok" or a short reason for status pages; reads files, loads nothing.
    check: Callable[..., str]


class FusedOrderReranker:
    """RAG_RERANK=none: the fused order, unscored."""

    name = "none"

    def rerank(self, *, query: str,
               candidates: Sequence[RerankCandidate]) -> list[RerankedCandidate]:
        """The candidates as they were fused."""
        return unscored(candidates)


def _fused_order_build(*, config: Config) -> Reranker:
    return FusedOrderReranker()


def _features_build(*, config: Config) -> Reranker:
    return FeaturesReranker()


def _always_ready(*, config: Config) -> str:
    return "ok"


RERANKERS: dict[str, RerankerSpec] = {spec.name: spec for spec in (
    RerankerSpec(name="none", settings=(), loads_model=False, build=_fused_order_build,
                 check=_always_ready),
    RerankerSpec(name="features", settings=(), loads_model=False, build=_features_build,
                 check=_always_ready),
    RerankerSpec(name="cross-encoder", settings=("RERANK_MODEL",), loads_model=True,
                 build=cross_encoder_reranker, check=cross_encoder_status),
    RerankerSpec(name="openai-compatible",
                 settings=("RERANK_BASE_URL", "RERANK_MODEL", "RERANK_API_KEY"),
                 loads_model=False, build=openai_compatible_reranker, check=_always_ready),
)}


def reranker_spec(*, config: Config) -> RerankerSpec:
    """The table entry of RAG_RERANK."""
    spec = RERANKERS.get(config.rag_rerank)
    if spec is None:
        raise ConfigError(f"rerank provider {config.rag_rerank!r} is not available; use one of "
                          f"{', '.join(RERANKERS)}", variable="RAG_RERANK")
    return spec


def rerank_settings_missing(*, config: Config) -> list[str]:
    """The variables RAG_RERANK needs that are unset."""
    return [name for name in reranker_spec(config=config).settings
            if not getattr(config, name.lower())]


def rerank_config_check(*, config: Config) -> None:
    """Raise RerankConfigMissing naming every unset variable the configured provider needs."""
    missing = rerank_settings_missing(config=config)
    if missing:
        raise RerankConfigMissing(
            f"RAG_RERANK={config.rag_rerank} needs {', '.join(missing)} to be set",
            details={"missing": missing, "variable": missing[0]})


def get_reranker(*, config: Config) -> Reranker:
    """The reranker for RAG_RERANK; checks its settings before building it."""
    rerank_config_check(config=config)
    return reranker_spec(config=config).build(config=config)


def rerank(*, query: str, candidates: Sequence[RerankCandidate],
           config: Config) -> list[RerankedCandidate]:
    """Every candidate, best first by the configured reranker (see base.RerankedCandidate)."""
    rerank_config_check(config=config)
    if not candidates:
        return []
    return reranker_spec(config=config).build(config=config).rerank(query=query,
                                                                   candidates=candidates)


def reranker_status(*, config: Config) -> str:
    """`ok` when the configured reranker can run now, else a short reason: `config_missing`,
    `runtime_missing` or `model_not_found`; reads files, loads nothing."""
    if rerank_settings_missing(config=config):
        return "config_missing"
    return reranker_spec(config=config).check(config=config)
