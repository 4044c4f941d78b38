"""The one typed, frozen configuration object, loaded once per process.

Precedence is fixed: OS environment > `.env` > code defaults. An empty value counts as unset
wherever it appears, so an empty OS variable never hides a value from `.env`. This module is the
only place in the project that reads `os.environ`.

Which embedding providers exist, and the defaults each implies, is core/embedding_providers.py:
the configuration's half of the provider table (embeddings/providers.py adds how to build them).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from dotenv import dotenv_values

# The settings table and the values it allows; the project imports them from here as ever.
from core.config_defaults import (
    DEFAULTS,
    EMBEDDING_DEVICES,
    EMBEDDING_DIM,
    FUSIONS,
    LLM_PROVIDERS,
    OCR_MODES,
    REFUSAL_RULES,
    RERANK_PROVIDERS,
    RETRIEVAL_MODES,
    SEARCH_INDEX_MODES,
    SECRET_KEY_MIN_CHARS,
    SECRET_KEYS,
    TOP_K_RANGE,
    VECTOR_INDEXES,
)
from core.config_defaults import (
    MAX_TEXT_CHARS as MAX_TEXT_CHARS,  # re-exported: the API schemas and the services read it
)
from core.dburl import database_url_valid, url_password_mask
from core.embedding_providers import EMBEDDING_PROVIDERS, EmbeddingProviderFacts
from core.errors import LocalRagError

ENV_FILE_VARIABLE = "LOCALRAG_ENV_FILE"
# Set for the server's processes by `rag serve --trusted-network` (ops/serving.py), never in a
# `.env`: the API then answers callers beyond loopback without a token while no token is issued.
TRUSTED_NETWORK_VARIABLE = "LOCALRAG_TRUSTED_NETWORK"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class ConfigError(LocalRagError):
    """A setting that is missing or invalid; `variable` names it."""

    code = "invalid_config"

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message, details={"variable": variable})
        self.variable = variable


def embedding_providers() -> Mapping[str, EmbeddingProviderFacts]:
    """The providers EMBEDDING_PROVIDER may name."""
    return EMBEDDING_PROVIDERS


@dataclass(frozen=True)
class Config:
    """Resolved, validated settings. `sources` says where each value came from."""

    postgres_db: str
    postgres_user: str
    postgres_password: str
    database_url: str
    test_database_url: str
    database_replica_urls: tuple[str, ...]  # read replicas for searches (core/replicas.py)
    rag_replica_max_lag_seconds: float
    rag_replica_check_seconds: float
    vault_path: Path
    upload_folder: Path  # UPLOAD_DIR as given: relative to the project root, or absolute
    # UPLOAD_STORE=s3: the bucket that holds every upload (knowledge/upload_store.py).
    upload_store: str
    upload_s3_bucket: str
    upload_s3_prefix: str
    upload_s3_endpoint_url: str
    upload_s3_region: str
    upload_s3_access_key_id: str
    upload_s3_secret_access_key: str = field(repr=False)
    upload_s3_timeout_seconds: float
    embedding_provider: str
    embedding_model: str
    embedding_dim: int
    embedding_device: str
    embedding_cache_dir: Path
    embedding_batch_size: int
    # EMBEDDING_PROVIDER=openai-compatible: the servers, their contract and limits.
    embedding_base_urls: tuple[str, ...]
    embedding_api_key: str = field(repr=False)
    embedding_dimensions: int  # the length of every vector the server returns
    embedding_send_dimensions: bool
    embedding_remote_batch_size: int
    embedding_max_input_tokens: int
    embedding_max_concurrency: int
    embedding_timeout_seconds: float
    embedding_max_retries: int
    embedding_query_instruction: str
    llm_provider: str
    llm_base_url: str
    llm_model: str
    llm_api_key: str = field(repr=False)
    llm_timeout_seconds: float
    llm_stream_max_seconds: float
    llm_max_retries: int
    llm_max_concurrency: int
    llm_queue_wait_seconds: float
    llm_max_response_bytes: int
    rag_retrieval: str
    rag_candidates: int
    rag_rerank: str
    rag_fusion: str
    rag_fusion_vector_weight: float | None
    rerank_model: str
    rerank_base_url: str
    rerank_api_key: str = field(repr=False)
    rerank_timeout_seconds: float
    # Hosts (lower case, no brackets) whose servers are this machine: text sent there stays.
    rag_outbound_local_hosts: frozenset[str]
    rag_vector_index: str
    rag_hnsw_min_chunks: int
    rag_hnsw_target_recall: float
    hnsw_m: int
    hnsw_ef_construction: int
    hnsw_ef_search: int
    rag_search_index: str  # on: candidates from the search index (index/); off: SQL only
    rag_search_index_candidates: int  # lexical candidates the index proposes per base
    search_index_folder: Path  # RAG_SEARCH_INDEX_DIR as given
    rag_top_k: int
    rag_min_similarity: float | None
    rag_refusal: str | None  # None: the embedding provider's rule (answering/refusal.py)
    rag_context_token_budget: int
    rag_context_per_document: int  # context blocks of one document at most
    rag_context_neighbours: int  # adjacent chunks a block cut mid-table/-sentence takes on
    rag_fallback_enabled: bool
    rag_allowed_hosts: tuple[str, ...]
    rag_api_token: str = field(repr=False)
    rag_secret_key: str = field(repr=False)  # signs sessions; "" until `rag serve` makes one
    rag_tls_proxy: bool
    rag_login_failure_limit: int  # failed sign-ins per account or address before a lock-out
    rag_login_lockout_minutes: int
    rag_token_failure_limit: int  # bad bearer tokens per address and minute
    rag_hsts_seconds: int
    rag_statement_timeout_seconds: float
    rag_document_max_mb: float
    rag_document_max_chars: int
    rag_document_max_paragraphs: int
    rag_document_max_chunks: int
    rag_pdf_max_pages: int
    rag_ocr: str
    rag_ocr_max_pages: int
    rag_watch: bool  # `rag serve` re-indexes the vault folders as their files change
    rag_mcp_token: str = field(repr=False)
    rag_trace_text: bool
    rag_trace_retention_days: int
    rag_answer_disclaimer: str
    rag_conversation_retention_days: int
    rag_conversation_history_turns: int  # earlier question-and-answer pairs in the prompt
    rag_conversation_history_tokens: int
    rag_condense_token_budget: int  # conversation tokens the follow-up condensation reads
    rag_condense_timeout_seconds: float
    project_root: Path | None
    env_file: Path | None
    raw: Mapping[str, str] = field(repr=False)
    sources: Mapping[str, str] = field(repr=False)
    # This process serves a network its operator trusts (TRUSTED_NETWORK_VARIABLE).
    trusted_network: bool = False

    @property
    def upload_dir(self) -> Path:
        """Where uploaded files are kept (one folder per knowledge base), resolved against the
        project root when UPLOAD_DIR is relative."""
        return (self.project_root or Path.cwd()) / self.upload_folder

    @property
    def search_index_dir(self) -> Path:
        """Where the search indexes are kept (index/store.py), resolved against the project
        root when RAG_SEARCH_INDEX_DIR is relative."""
        return (self.project_root or Path.cwd()) / self.search_index_folder

    @property
    def embedding_spec(self) -> EmbeddingProviderFacts:
        """The table entry of EMBEDDING_PROVIDER."""
        return embedding_providers()[self.embedding_provider]

    @property
    def threshold(self) -> float:
        """RAG_MIN_SIMILARITY when set explicitly, else the provider default."""
        if self.rag_min_similarity is not None:
            return self.rag_min_similarity
        return self.embedding_spec.default_threshold

    @property
    def fusion_vector_weight(self) -> float:
        """The vector channel's weight in convex fusion: RAG_FUSION_VECTOR_WEIGHT when set,
        else the provider's fitted default (the lexical channel gets the rest)."""
        if self.rag_fusion_vector_weight is not None:
            return self.rag_fusion_vector_weight
        return self.embedding_spec.fusion_vector_weight

    @property
    def threshold_origin(self) -> str:
        if self.rag_min_similarity is not None:
            return "explicit"
        return f"{self.embedding_provider} default"

    @property
    def rag_document_max_bytes(self) -> int:
        """RAG_DOCUMENT_MAX_MB in bytes: the largest document (other than a note) read."""
        return int(self.rag_document_max_mb * 1024 * 1024)

    def display_items(self) -> list[tuple[str, str, str]]:
        """(name, shown value, source) for every key; secrets and DB passwords masked."""
        items = []
        for name in DEFAULTS:
            value = self.raw[name]
            if name in SECRET_KEYS:
                value = "<set>" if value else "<unset>"
            elif name == "POSTGRES_PASSWORD":
                value = "<set>" if value else "<unset>"
            elif name.endswith("DATABASE_URL"):
                value = url_password_mask(value)
            elif name == "DATABASE_REPLICA_URLS":
                value = ",".join(url_password_mask(url.strip()) for url in value.split(",")
                                 if url.strip())
            items.append((name, value, self.sources[name]))
        return items


def project_root_find(start: Path) -> Path | None:
    """First directory at or above `start` holding both pyproject.toml and .env.sample."""
    for candidate in (start, *start.parents):
        if (candidate / "pyproject.toml").is_file() and (candidate / ".env.sample").is_file():
            return candidate
    return None


def config_load(
    *,
    environ: Mapping[str, str],
    start_dir: Path,
    env_file: Path | None = None,
) -> Config:
    """Resolve OS env > .env > defaults and validate. Pure: every input is passed in."""
    explicit_env_file = env_file is not None
    project_root = project_root_find(start_dir.resolve())
    if project_root is None:
        project_root = project_root_find(Path(__file__).resolve().parent)
    if env_file is None and project_root is not None:
        env_file = project_root / ".env"
    file_values: dict[str, str | None] = {}
    if env_file is not None:
        if env_file.is_file():
            file_values = dict(dotenv_values(env_file))
        elif explicit_env_file:
            raise ConfigError(f"env file not found: {env_file} (check --env-file)",
                              variable="--env-file")
    raw: dict[str, str] = {}
    sources: dict[str, str] = {}
    for name, default in DEFAULTS.items():
        if environ.get(name, "").strip():
            raw[name], sources[name] = environ[name].strip(), "env"
        elif (file_values.get(name) or "").strip():
            raw[name], sources[name] = str(file_values[name]).strip(), ".env"
        else:
            raw[name], sources[name] = default, "default"
    config = _validate(raw, sources, project_root=project_root, env_file=env_file)
    return replace(config, trusted_network=environ.get(TRUSTED_NETWORK_VARIABLE) == "1")


def config_with(config: Config, **variables: str) -> Config:
    """`config` with some variables (by name, e.g. RAG_CANDIDATES="30") set otherwise, checked
    by the same validation as at start-up; reads no file. ConfigError names the one at fault."""
    checked = _validate({**config.raw, **variables},
                        {**config.sources, **{name: "override" for name in variables}},
                        project_root=config.project_root, env_file=config.env_file)
    return replace(checked, trusted_network=config.trusted_network)


def _validate(raw: dict[str, str], sources: dict[str, str], *, project_root: Path | None,
              env_file: Path | None) -> Config:
    providers = embedding_providers()
    provider = _choice(raw, "EMBEDDING_PROVIDER", tuple(providers))
    fixed_model = providers[provider].fixed_model
    if not raw["EMBEDDING_MODEL"]:
        if provider == "openai-compatible":
            raise ConfigError("EMBEDDING_MODEL must name the embedding server's model when "
                              "EMBEDDING_PROVIDER=openai-compatible", variable="EMBEDDING_MODEL")
        if fixed_model is None:
            raise ConfigError(
                "EMBEDDING_MODEL must name a local model directory or an installed model package "
                "when EMBEDDING_PROVIDER=sentence-transformers", variable="EMBEDDING_MODEL")
        raw["EMBEDDING_MODEL"] = fixed_model
    if fixed_model is not None and raw["EMBEDDING_MODEL"] != fixed_model:
        raise ConfigError(
            f"EMBEDDING_MODEL={raw['EMBEDDING_MODEL']!r} does not match EMBEDDING_PROVIDER="
            f"{provider}; its fixed model is {fixed_model!r}", variable="EMBEDDING_MODEL")
    dim = _integer(raw, "EMBEDDING_DIM")
    if dim != EMBEDDING_DIM:
        raise ConfigError(f"EMBEDDING_DIM={dim} is not supported; the schema stores "
                          f"vector({EMBEDDING_DIM}), so it must be {EMBEDDING_DIM}",
                          variable="EMBEDDING_DIM")
    device = _choice(raw, "EMBEDDING_DEVICE", EMBEDDING_DEVICES)
    batch_size = _integer(raw, "EMBEDDING_BATCH_SIZE")
    if batch_size < 1:
        raise ConfigError("EMBEDDING_BATCH_SIZE must be a positive integer",
                          variable="EMBEDDING_BATCH_SIZE")
    embedding_urls = _embedding_urls(raw, required=provider == "openai-compatible")
    llm_provider = _choice(raw, "LLM_PROVIDER", LLM_PROVIDERS)
    timeout = _positive_number(raw, "LLM_TIMEOUT_SECONDS")
    stream_max = _positive_number(raw, "LLM_STREAM_MAX_SECONDS")
    retries = _integer(raw, "LLM_MAX_RETRIES")
    if not 0 <= retries <= 10:
        raise ConfigError("LLM_MAX_RETRIES must be between 0 and 10", variable="LLM_MAX_RETRIES")
    concurrency = _integer(raw, "LLM_MAX_CONCURRENCY")
    if concurrency < 1:
        raise ConfigError("LLM_MAX_CONCURRENCY must be a positive integer",
                          variable="LLM_MAX_CONCURRENCY")
    queue_wait = _number(raw, "LLM_QUEUE_WAIT_SECONDS")
    if not math.isfinite(queue_wait) or queue_wait < 0:
        raise ConfigError("LLM_QUEUE_WAIT_SECONDS must be 0 or more",
                          variable="LLM_QUEUE_WAIT_SECONDS")
    max_response = _integer(raw, "LLM_MAX_RESPONSE_BYTES")
    if max_response < 1024:
        raise ConfigError("LLM_MAX_RESPONSE_BYTES must be at least 1024",
                          variable="LLM_MAX_RESPONSE_BYTES")
    statement_timeout = _positive_number(raw, "RAG_STATEMENT_TIMEOUT_SECONDS")
    retrieval = _choice(raw, "RAG_RETRIEVAL", RETRIEVAL_MODES)
    candidates = _bounded_integer(raw, "RAG_CANDIDATES", 1, 500)
    rerank = (_choice(raw, "RAG_RERANK", RERANK_PROVIDERS) if raw["RAG_RERANK"]
              else providers[provider].default_rerank)
    fusion = _choice(raw, "RAG_FUSION", FUSIONS)
    fusion_vector_weight = None
    if raw["RAG_FUSION_VECTOR_WEIGHT"].strip():
        fusion_vector_weight = _number(raw, "RAG_FUSION_VECTOR_WEIGHT")
        if not 0 <= fusion_vector_weight <= 1:
            raise ConfigError("RAG_FUSION_VECTOR_WEIGHT must be between 0 and 1",
                              variable="RAG_FUSION_VECTOR_WEIGHT")
    rerank_timeout = _positive_number(raw, "RERANK_TIMEOUT_SECONDS")
    vector_index = _choice(raw, "RAG_VECTOR_INDEX", VECTOR_INDEXES)
    hnsw_min_chunks = _bounded_integer(raw, "RAG_HNSW_MIN_CHUNKS", 0, 10**9)
    hnsw_target_recall = _number(raw, "RAG_HNSW_TARGET_RECALL")
    if not (math.isfinite(hnsw_target_recall) and 0 < hnsw_target_recall <= 1):
        raise ConfigError("RAG_HNSW_TARGET_RECALL must be greater than 0 and at most 1 (a "
                          "recall@10 such as 0.98)", variable="RAG_HNSW_TARGET_RECALL")
    hnsw_m = _bounded_integer(raw, "HNSW_M", 2, 100)
    hnsw_ef_construction = _bounded_integer(raw, "HNSW_EF_CONSTRUCTION", 4, 1000)
    hnsw_ef_search = _bounded_integer(raw, "HNSW_EF_SEARCH", 1, 1000)
    search_index = _choice(raw, "RAG_SEARCH_INDEX", SEARCH_INDEX_MODES)
    search_index_candidates = _bounded_integer(raw, "RAG_SEARCH_INDEX_CANDIDATES", 10, 10_000)
    top_k = _integer(raw, "RAG_TOP_K")
    if not TOP_K_RANGE[0] <= top_k <= TOP_K_RANGE[1]:
        raise ConfigError(f"RAG_TOP_K={top_k} is outside {TOP_K_RANGE[0]}..{TOP_K_RANGE[1]}",
                          variable="RAG_TOP_K")
    min_similarity = None
    if raw["RAG_MIN_SIMILARITY"]:
        min_similarity = _number(raw, "RAG_MIN_SIMILARITY")
        if not 0.0 <= min_similarity <= 1.0:
            raise ConfigError("RAG_MIN_SIMILARITY must be between 0 and 1",
                              variable="RAG_MIN_SIMILARITY")
    budget = _integer(raw, "RAG_CONTEXT_TOKEN_BUDGET")
    if budget < 1:
        raise ConfigError("RAG_CONTEXT_TOKEN_BUDGET must be a positive integer",
                          variable="RAG_CONTEXT_TOKEN_BUDGET")
    for name in ("DATABASE_URL", "TEST_DATABASE_URL"):
        if not database_url_valid(raw[name]):
            raise ConfigError(f"{name} must be a postgresql://user:password@host:port/database "
                              "URL", variable=name)
    replica_urls = tuple(url.strip() for url in raw["DATABASE_REPLICA_URLS"].split(",")
                         if url.strip())
    for url in replica_urls:
        if not database_url_valid(url):
            raise ConfigError("DATABASE_REPLICA_URLS must hold postgresql://user:password@host:"
                              f"port/database URLs; one is {url_password_mask(url)!r}",
                              variable="DATABASE_REPLICA_URLS")
    upload_store = _upload_store(raw)
    # The key travels in an HTTP header, which only carries printable ASCII.
    for name in ("LLM_API_KEY", "RAG_API_TOKEN", "RERANK_API_KEY", "RAG_MCP_TOKEN",
                 "EMBEDDING_API_KEY"):
        if raw[name] and not (raw[name].isascii() and raw[name].isprintable()):
            raise ConfigError(f"{name} contains characters an HTTP header cannot carry "
                              "(non-ASCII or control characters); check how it was copied",
                              variable=name)
    base = project_root or Path.cwd()
    return Config(
        postgres_db=raw["POSTGRES_DB"],
        postgres_user=raw["POSTGRES_USER"],
        postgres_password=raw["POSTGRES_PASSWORD"],
        database_url=raw["DATABASE_URL"],
        test_database_url=raw["TEST_DATABASE_URL"],
        database_replica_urls=replica_urls,
        rag_replica_max_lag_seconds=_positive_number(raw, "RAG_REPLICA_MAX_LAG_SECONDS"),
        rag_replica_check_seconds=_positive_number(raw, "RAG_REPLICA_CHECK_SECONDS"),
        vault_path=base / Path(raw["VAULT_PATH"]).expanduser(),
        upload_folder=Path(raw["UPLOAD_DIR"]).expanduser(),
        upload_store=upload_store,
        upload_s3_bucket=raw["UPLOAD_S3_BUCKET"].strip(),
        upload_s3_prefix=raw["UPLOAD_S3_PREFIX"].strip().lstrip("/"),
        upload_s3_endpoint_url=raw["UPLOAD_S3_ENDPOINT_URL"].strip().rstrip("/"),
        upload_s3_region=raw["UPLOAD_S3_REGION"].strip(),
        upload_s3_access_key_id=raw["UPLOAD_S3_ACCESS_KEY_ID"].strip(),
        upload_s3_secret_access_key=raw["UPLOAD_S3_SECRET_ACCESS_KEY"],
        upload_s3_timeout_seconds=_positive_number(raw, "UPLOAD_S3_TIMEOUT_SECONDS"),
        embedding_provider=provider,
        embedding_model=raw["EMBEDDING_MODEL"],
        embedding_dim=dim,
        embedding_device=device,
        embedding_cache_dir=base / Path(raw["EMBEDDING_CACHE_DIR"]).expanduser(),
        embedding_batch_size=batch_size,
        embedding_base_urls=embedding_urls,
        embedding_api_key=raw["EMBEDDING_API_KEY"],
        embedding_dimensions=_bounded_integer(raw, "EMBEDDING_DIMENSIONS", 1, EMBEDDING_DIM),
        embedding_send_dimensions=_boolean(raw, "EMBEDDING_SEND_DIMENSIONS"),
        embedding_remote_batch_size=_bounded_integer(raw, "EMBEDDING_REMOTE_BATCH_SIZE", 1, 2048),
        embedding_max_input_tokens=_bounded_integer(raw, "EMBEDDING_MAX_INPUT_TOKENS", 16,
                                                    1_000_000),
        embedding_max_concurrency=_bounded_integer(raw, "EMBEDDING_MAX_CONCURRENCY", 1, 64),
        embedding_timeout_seconds=_positive_number(raw, "EMBEDDING_TIMEOUT_SECONDS"),
        embedding_max_retries=_bounded_integer(raw, "EMBEDDING_MAX_RETRIES", 0, 10),
        embedding_query_instruction=raw["EMBEDDING_QUERY_INSTRUCTION"].replace("\\n", "\n"),
        llm_provider=llm_provider,
        llm_base_url=raw["LLM_BASE_URL"],
        llm_model=raw["LLM_MODEL"],
        llm_api_key=raw["LLM_API_KEY"],
        llm_timeout_seconds=timeout,
        llm_stream_max_seconds=stream_max,
        llm_max_retries=retries,
        llm_max_concurrency=concurrency,
        llm_queue_wait_seconds=queue_wait,
        llm_max_response_bytes=max_response,
        rag_retrieval=retrieval,
        rag_candidates=candidates,
        rag_rerank=rerank,
        rag_fusion=fusion,
        rag_fusion_vector_weight=fusion_vector_weight,
        rerank_model=raw["RERANK_MODEL"],
        rerank_base_url=raw["RERANK_BASE_URL"],
        rerank_api_key=raw["RERANK_API_KEY"],
        rerank_timeout_seconds=rerank_timeout,
        rag_outbound_local_hosts=frozenset(
            host.strip().strip("[]").lower() for host in raw["RAG_OUTBOUND_LOCAL_HOSTS"].split(",")
            if host.strip()),
        rag_vector_index=vector_index,
        rag_hnsw_min_chunks=hnsw_min_chunks,
        rag_hnsw_target_recall=hnsw_target_recall,
        hnsw_m=hnsw_m,
        rag_search_index=search_index,
        rag_search_index_candidates=search_index_candidates,
        search_index_folder=Path(raw["RAG_SEARCH_INDEX_DIR"]).expanduser(),
        hnsw_ef_construction=hnsw_ef_construction,
        hnsw_ef_search=hnsw_ef_search,
        rag_top_k=top_k,
        rag_min_similarity=min_similarity,
        rag_refusal=_choice(raw, "RAG_REFUSAL", REFUSAL_RULES) if raw["RAG_REFUSAL"] else None,
        rag_context_token_budget=budget,
        rag_context_per_document=_bounded_integer(raw, "RAG_CONTEXT_PER_DOCUMENT", 1, 20),
        rag_context_neighbours=_bounded_integer(raw, "RAG_CONTEXT_NEIGHBOURS", 0, 5),
        rag_fallback_enabled=_boolean(raw, "RAG_FALLBACK_ENABLED"),
        rag_allowed_hosts=tuple(host.strip() for host in raw["RAG_ALLOWED_HOSTS"].split(",")
                                if host.strip()),
        rag_api_token=raw["RAG_API_TOKEN"],
        rag_secret_key=_secret_key(raw),
        rag_tls_proxy=_boolean(raw, "RAG_TLS_PROXY"),
        rag_login_failure_limit=_bounded_integer(raw, "RAG_LOGIN_FAILURE_LIMIT", 1, 1000),
        rag_login_lockout_minutes=_bounded_integer(raw, "RAG_LOGIN_LOCKOUT_MINUTES", 1, 525_600),
        rag_token_failure_limit=_bounded_integer(raw, "RAG_TOKEN_FAILURE_LIMIT", 1, 100_000),
        rag_hsts_seconds=_bounded_integer(raw, "RAG_HSTS_SECONDS", 0, 63_072_000),
        rag_statement_timeout_seconds=statement_timeout,
        rag_document_max_mb=_positive_number(raw, "RAG_DOCUMENT_MAX_MB"),
        rag_document_max_chars=_bounded_integer(raw, "RAG_DOCUMENT_MAX_CHARS", 1000,
                                                1_000_000_000),
        rag_document_max_paragraphs=_bounded_integer(raw, "RAG_DOCUMENT_MAX_PARAGRAPHS", 1,
                                                     100_000_000),
        rag_document_max_chunks=_bounded_integer(raw, "RAG_DOCUMENT_MAX_CHUNKS", 1, 10_000_000),
        rag_pdf_max_pages=_bounded_integer(raw, "RAG_PDF_MAX_PAGES", 1, 1_000_000),
        rag_ocr=_choice(raw, "RAG_OCR", OCR_MODES),
        rag_ocr_max_pages=_bounded_integer(raw, "RAG_OCR_MAX_PAGES", 0, 1_000_000),
        rag_watch=_boolean(raw, "RAG_WATCH"),
        rag_mcp_token=raw["RAG_MCP_TOKEN"].strip(),
        rag_trace_text=_boolean(raw, "RAG_TRACE_TEXT"),
        rag_trace_retention_days=_bounded_integer(raw, "RAG_TRACE_RETENTION_DAYS", 1, 36500),
        rag_answer_disclaimer=_one_line_text(raw, "RAG_ANSWER_DISCLAIMER", max_chars=500),
        rag_conversation_retention_days=_bounded_integer(raw, "RAG_CONVERSATION_RETENTION_DAYS",
                                                         1, 36500),
        rag_conversation_history_turns=_bounded_integer(raw, "RAG_CONVERSATION_HISTORY_TURNS",
                                                        0, 50),
        rag_conversation_history_tokens=_bounded_integer(raw, "RAG_CONVERSATION_HISTORY_TOKENS",
                                                         0, 100_000),
        rag_condense_token_budget=_bounded_integer(raw, "RAG_CONDENSE_TOKEN_BUDGET", 50, 100_000),
        rag_condense_timeout_seconds=_positive_number(raw, "RAG_CONDENSE_TIMEOUT_SECONDS"),
        project_root=project_root,
        env_file=env_file,
        raw=dict(raw),
        sources=dict(sources),
    )


UPLOAD_STORES = ("folder", "s3")
# S3's own rule for bucket names (3-63 lowercase letters, digits, dots and hyphens).
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def _upload_store(raw: Mapping[str, str]) -> str:
    """UPLOAD_STORE, with what `s3` needs: a valid bucket name, an http(s) endpoint when one
    is named, and an access key only with its secret."""
    store = _choice(raw, "UPLOAD_STORE", UPLOAD_STORES)
    if store != "s3":
        return store
    bucket = raw["UPLOAD_S3_BUCKET"].strip()
    if not _BUCKET_NAME.fullmatch(bucket):
        raise ConfigError("UPLOAD_S3_BUCKET must name the bucket (3-63 lowercase letters, "
                          "digits, dots and hyphens) when UPLOAD_STORE=s3",
                          variable="UPLOAD_S3_BUCKET")
    endpoint = raw["UPLOAD_S3_ENDPOINT_URL"].strip()
    if endpoint and not _http_url(endpoint):
        raise ConfigError("UPLOAD_S3_ENDPOINT_URL must be an http(s):// URL with a host "
                          "(e.g. http://minio:9000)", variable="UPLOAD_S3_ENDPOINT_URL")
    if bool(raw["UPLOAD_S3_ACCESS_KEY_ID"].strip()) != bool(raw["UPLOAD_S3_SECRET_ACCESS_KEY"]):
        raise ConfigError("UPLOAD_S3_ACCESS_KEY_ID and UPLOAD_S3_SECRET_ACCESS_KEY are set "
                          "together, or neither (boto3's own credentials then)",
                          variable="UPLOAD_S3_ACCESS_KEY_ID")
    return store


def _embedding_urls(raw: Mapping[str, str], *, required: bool) -> tuple[str, ...]:
    """EMBEDDING_BASE_URL's servers: each an http(s) URL with a host, no two alike."""
    name = "EMBEDDING_BASE_URL"
    urls = tuple(dict.fromkeys(url.strip().rstrip("/") for url in raw[name].split(",")
                               if url.strip()))
    if required and not urls:
        raise ConfigError(f"{name} must name the embedding server (e.g. http://gpu-1:8080/v1; "
                          "several comma-separated) when EMBEDDING_PROVIDER=openai-compatible",
                          variable=name)
    for url in urls:
        if not _http_url(url):
            shown = endpoint_origin(url) or "a value"
            raise ConfigError(f"{name} holds {shown}, which is not an http(s):// URL with a "
                              "host", variable=name)
    return urls


def _http_url(url: str) -> bool:
    """Whether `url` is an http(s) URL with a host (and a port, if any, that is a number)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


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


def _choice(raw: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    if raw[name] not in choices:
        raise ConfigError(f"{name}={raw[name]!r} is not supported; use one of "
                          f"{', '.join(choices)}", variable=name)
    return raw[name]


def _integer(raw: Mapping[str, str], name: str) -> int:
    try:
        return int(raw[name])
    except ValueError:
        raise ConfigError(f"{name}={raw[name]!r} is not an integer", variable=name) from None


def _number(raw: Mapping[str, str], name: str) -> float:
    try:
        return float(raw[name])
    except ValueError:
        raise ConfigError(f"{name}={raw[name]!r} is not a number", variable=name) from None


def _one_line_text(raw: Mapping[str, str], name: str, *, max_chars: int) -> str:
    value = raw[name].strip()
    if "\n" in value or "\r" in value or len(value) > max_chars:
        raise ConfigError(f"{name} must be one line of at most {max_chars} characters",
                          variable=name)
    return value


def _bounded_integer(raw: Mapping[str, str], name: str, low: int, high: int) -> int:
    value = _integer(raw, name)
    if not low <= value <= high:
        raise ConfigError(f"{name}={value} is outside {low}..{high}", variable=name)
    return value


def _positive_number(raw: Mapping[str, str], name: str) -> float:
    value = _number(raw, name)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be greater than 0", variable=name)
    return value


def _secret_key(raw: Mapping[str, str]) -> str:
    key = raw["RAG_SECRET_KEY"]
    if key and len(key) < SECRET_KEY_MIN_CHARS:
        raise ConfigError(f"RAG_SECRET_KEY must be at least {SECRET_KEY_MIN_CHARS} characters: "
                          "it signs the workbench's sessions (leave it empty and `rag serve` "
                          "makes one)", variable="RAG_SECRET_KEY")
    return key


def _boolean(raw: Mapping[str, str], name: str) -> bool:
    value = raw[name].lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={raw[name]!r} is not a boolean (true/false)", variable=name)


_config: Config | None = None


def env_file_use(path: Path) -> None:
    """Make this process and its children read `path` instead of the discovered `.env`."""
    global _config
    os.environ[ENV_FILE_VARIABLE] = str(Path(path).expanduser().resolve())
    _config = None


def config_use(config: Config) -> None:
    """Make `config` the process-wide configuration (tests change one setting this way, with
    `dataclasses.replace(get_config(), ...)`, and put the original back afterwards)."""
    global _config
    _config = config


def get_config() -> Config:
    """The process-wide configuration, loaded on first use."""
    global _config
    if _config is None:
        env_file = os.environ.get(ENV_FILE_VARIABLE)
        _config = config_load(environ=os.environ, start_dir=Path.cwd(),
                              env_file=Path(env_file) if env_file else None)
    return _config
