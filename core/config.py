"""The one typed, frozen configuration object, loaded once per process.

Precedence is fixed: OS environment > `.env` > code defaults. An empty value counts as unset
wherever it appears, so an empty OS variable never hides a value from `.env`. This module is the
only place in the project that reads `os.environ`.

Which embedding providers exist, and the defaults each implies, is core/embedding_providers.py:
the configuration's half of the provider table (embeddings/providers.py adds how to build them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from dotenv import dotenv_values

# ConfigError, endpoint_origin and the values some settings allow are defined beside the table
# of settings (re-exported: the project imports them from here as ever).
from core.config_parse import (
    ConfigError,
    endpoint_origin,  # noqa: F401
    http_url,
    one_of,
)
from core.embedding_providers import EMBEDDING_PROVIDERS, EmbeddingProviderFacts
from core.key_refs import key_file_path, key_file_read, key_references_resolve, key_variable_read
from core.prices import ModelPrice
from core.settings_table import (
    EMBEDDING_DIM,  # noqa: F401
    MAX_TEXT_CHARS,  # noqa: F401
    RERANK_PROVIDERS,  # noqa: F401
    RETRIEVAL_MODES,  # noqa: F401
    SETTINGS,
    SETTINGS_BY_NAME,
    TOP_K_RANGE,  # noqa: F401
    settings_parse,
)

ENV_FILE_VARIABLE = "LOCALRAG_ENV_FILE"
# Set for the server's processes by `rag serve --trusted-network` (ops/serving.py), never in a
# `.env`: the API then answers callers beyond loopback without a token while no token is issued.
TRUSTED_NETWORK_VARIABLE = "LOCALRAG_TRUSTED_NETWORK"


@dataclass(frozen=True)
class Config:
    """Resolved, validated settings. `sources` says where each value came from.

    Every field up to `project_root` is one setting of core/settings_table.py, filled by name
    from the table's parsers (a field the table lacks, or a row without its field, fails every
    load); the annotations are what the type checker reads."""

    postgres_db: str
    postgres_user: str
    postgres_password: str = field(repr=False)
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
    llm_api_key: str = field(repr=False)  # also when given by reference (core/key_refs.py)
    llm_api_key_env: str  # the variable that holds the key, or ""
    llm_api_key_file: str  # the file that holds the key, as written, or ""
    llm_api_key_required: bool  # false: a server on this machine may take no key
    llm_timeout_seconds: float
    llm_stream_max_seconds: float
    llm_max_retries: int
    llm_max_concurrency: int
    llm_queue_wait_seconds: float
    llm_max_response_bytes: int
    rag_breaker_failures: int  # core/breaker.py
    rag_breaker_cooloff_seconds: float
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
    rag_ocr_review_confidence: float  # recogniser confidence 0-1 below which a page is reviewed
    rag_watch: bool  # `rag serve` re-indexes the vault folders as their files change
    rag_mcp_token: str = field(repr=False)
    rag_trace_text: bool
    rag_trace_retention_days: int
    rag_audit_retention_days: int  # audit/records.py
    rag_model_prices: Mapping[str, ModelPrice]  # model name -> price (core/prices.py)
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
        return EMBEDDING_PROVIDERS[self.embedding_provider]

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
        """(name, shown value, source) for every setting, in the table's order; secrets and
        database passwords masked."""
        return [(setting.name, setting.shown(self.raw[setting.name]), self.sources[setting.name])
                for setting in SETTINGS]


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
    for setting in SETTINGS:
        name = setting.name
        if environ.get(name, "").strip():
            raw[name], sources[name] = environ[name].strip(), "env"
        elif (file_values.get(name) or "").strip():
            raw[name], sources[name] = str(file_values[name]).strip(), ".env"
        else:
            raw[name], sources[name] = setting.default, "default"
    key_references_resolve(raw, sources, environ=environ, base=project_root or Path.cwd())
    config = _validate(raw, sources, project_root=project_root, env_file=env_file)
    return replace(config, trusted_network=environ.get(TRUSTED_NETWORK_VARIABLE) == "1")


def config_with(config: Config, **variables: str) -> Config:
    """`config` with some variables (by name, e.g. RAG_CANDIDATES="30") set otherwise, checked
    by the same validation as at start-up; reads no file. ConfigError names the one at fault,
    or a name that is not a setting."""
    for name in variables:
        if name not in SETTINGS_BY_NAME:
            raise ConfigError(f"{name} is not a setting (core/settings_table.py lists them)",
                              variable=name)
    checked = _validate({**config.raw, **variables},
                        {**config.sources, **{name: "override" for name in variables}},
                        project_root=config.project_root, env_file=config.env_file)
    return replace(checked, trusted_network=config.trusted_network)


def key_reference_read(*, config: Config, setting: str, reference: str) -> str:
    """The key a reference would give now, checked as at start-up: `reference` is the name of
    an environment variable of this process (setting LLM_API_KEY_ENV) or a key file's path
    (LLM_API_KEY_FILE, relative to the project root); "" for a variable that is not set. For
    `rag llm use`, which tries a key before it writes the reference."""
    if setting.endswith("_FILE"):
        return key_file_read(key_file_path(reference, base=config.project_root or Path.cwd()),
                             setting=setting)
    return key_variable_read(setting=setting, variable=reference, environ=os.environ)


def _validate(raw: dict[str, str], sources: dict[str, str], *, project_root: Path | None,
              env_file: Path | None) -> Config:
    providers = EMBEDDING_PROVIDERS
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
    values = settings_parse(raw, base=project_root or Path.cwd())
    if values["rag_rerank"] is None:
        values["rag_rerank"] = providers[provider].default_rerank
    config = Config(**values, project_root=project_root, env_file=env_file, raw=dict(raw),
                    sources=dict(sources))
    _embedding_servers_check(config)
    _upload_bucket_check(config)
    return config


# S3's own rule for bucket names (3-63 lowercase letters, digits, dots and hyphens).
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def _upload_bucket_check(config: Config) -> None:
    """What UPLOAD_STORE=s3 needs: a valid bucket name, an http(s) endpoint when one is named,
    and an access key only with its secret."""
    if config.upload_store != "s3":
        return
    if not _BUCKET_NAME.fullmatch(config.upload_s3_bucket):
        raise ConfigError("UPLOAD_S3_BUCKET must name the bucket (3-63 lowercase letters, "
                          "digits, dots and hyphens) when UPLOAD_STORE=s3",
                          variable="UPLOAD_S3_BUCKET")
    endpoint = config.upload_s3_endpoint_url
    if endpoint and not http_url(endpoint):
        raise ConfigError("UPLOAD_S3_ENDPOINT_URL must be an http(s):// URL with a host "
                          "(e.g. http://minio:9000)", variable="UPLOAD_S3_ENDPOINT_URL")
    if bool(config.upload_s3_access_key_id) != bool(config.upload_s3_secret_access_key):
        raise ConfigError("UPLOAD_S3_ACCESS_KEY_ID and UPLOAD_S3_SECRET_ACCESS_KEY are set "
                          "together, or neither (boto3's own credentials then)",
                          variable="UPLOAD_S3_ACCESS_KEY_ID")


def _embedding_servers_check(config: Config) -> None:
    """EMBEDDING_PROVIDER=openai-compatible needs EMBEDDING_BASE_URL's servers."""
    if config.embedding_provider == "openai-compatible" and not config.embedding_base_urls:
        raise ConfigError("EMBEDDING_BASE_URL must name the embedding server (e.g. "
                          "http://gpu-1:8080/v1; several comma-separated) when "
                          "EMBEDDING_PROVIDER=openai-compatible", variable="EMBEDDING_BASE_URL")


def _choice(raw: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    return one_of(name, raw[name], choices)


_config: Config | None = None


def env_file_use(path: Path) -> None:
    """Make this process and its children read `path` instead of the discovered `.env`."""
    global _config
    os.environ[ENV_FILE_VARIABLE] = str(Path(path).expanduser().resolve())
    _config = None


def config_use(config: Config) -> None:
    """Make `config` the process-wide configuration (`rag serve` marks a trusted network this
    way; tests change settings through their `config_override` fixture, which uses it)."""
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
