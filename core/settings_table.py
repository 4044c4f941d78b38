"""Every setting of local-rag, once: its variable, code default, parser with its bounds, whether
it is secret, and a line of help.

`Config` (core/config.py) is filled from this table, `rag config` lists it in its order, and
tests/core/test_settings_table.py checks `.env.sample` and the settings list of
docs/configuration.md against it: every setting once, with its default. Rules involving several
settings (the embedding provider and its model, the upload bucket) are functions in
core/config.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config_parse import (
    POSITIVE,
    Choice,
    DatabaseUrl,
    DatabaseUrls,
    Flag,
    Folder,
    HeaderText,
    HostSet,
    HttpUrls,
    Integer,
    Items,
    Number,
    OneLine,
    OrNone,
    Parser,
    SigningKey,
    Text,
    VariableName,
)
from core.prices import ModelPrices

EMBEDDING_DIM = 1024  # the schema stores vector(1024)
EMBEDDING_DEVICES = ("cpu", "cuda", "mps")
LLM_PROVIDERS = ("fake", "openai-compatible", "extractive")
RETRIEVAL_MODES = ("vector", "lexical", "hybrid")
RERANK_PROVIDERS = ("none", "features", "cross-encoder", "openai-compatible")
FUSIONS = ("convex", "rrf")
VECTOR_INDEXES = ("exact", "hnsw", "auto")
SEARCH_INDEX_MODES = ("on", "off")
OCR_MODES = ("auto", "off")
REFUSAL_RULES = ("threshold", "signals")  # answering/refusal.py
UPLOAD_STORES = ("folder", "s3")
TOP_K_RANGE = (1, 20)
MAX_TEXT_CHARS = 4000  # longest query / question accepted by the API, the CLI and the services
SECRET_KEY_MIN_CHARS = 32
_DAYS = Integer(1, 36500)
_AT_LEAST_1 = "{name} must be a positive integer"


@dataclass(frozen=True)
class Setting:
    """One environment variable and the `Config` field it fills."""

    name: str
    default: str  # the code default, as text; empty: unset
    parser: Parser[Any]
    help: str
    secret: bool = False  # `rag config` shows only <set> or <unset>
    field: str = ""  # the Config field; empty: the name in lower case
    sample: str | None = None  # the value .env.sample suggests, where not the default

    @property
    def config_field(self) -> str:
        return self.field or self.name.lower()

    def shown(self, text: str) -> str:
        """What `rag config` prints for the value `text`."""
        if self.secret:
            return "<set>" if text else "<unset>"
        return self.parser.shown(text)


def _key_prefix(text: str) -> str:
    return text.strip().lstrip("/")


def _endpoint(text: str) -> str:
    return text.strip().rstrip("/")


def _escapes_read(text: str) -> str:
    # One line in .env; "\n" in it is a line break.
    return text.replace("\\n", "\n")


_S = Setting
# In the order `rag config` lists them.
SETTINGS: tuple[Setting, ...] = (
    _S("POSTGRES_DB", "local_rag", Text(), "The database Docker Compose creates."),
    _S("POSTGRES_USER", "local_rag", Text(), "The user Docker Compose creates."),
    _S("POSTGRES_PASSWORD", "local_rag", Text(), "That user's password.", secret=True),
    _S("DATABASE_URL", "postgresql://local_rag:local_rag@localhost:5432/local_rag",
       DatabaseUrl(), "The application database."),
    _S("TEST_DATABASE_URL", "postgresql://local_rag:local_rag@localhost:5432/local_rag_test",
       DatabaseUrl(), "The test database: its name ends in _test and differs from the other's."),
    _S("DATABASE_REPLICA_URLS", "", DatabaseUrls(),
       "Streaming replicas searches may read from, comma-separated (core/replicas.py)."),
    _S("RAG_REPLICA_MAX_LAG_SECONDS", "5", POSITIVE, "A replica further behind is skipped."),
    _S("RAG_REPLICA_CHECK_SECONDS", "2", POSITIVE, "How often each replica is checked."),
    _S("VAULT_PATH", "samples/acme-vault", Folder(resolved=True),
       "Vault of `rag ingest` without a path, relative to the project root."),
    _S("UPLOAD_DIR", ".local/uploads", Folder(), "Where uploads are kept (or cached with s3).",
       field="upload_folder"),
    _S("UPLOAD_STORE", "folder", Choice(UPLOAD_STORES),
       "folder (UPLOAD_DIR) or s3 (an S3-compatible bucket, knowledge/upload_store.py)."),
    _S("UPLOAD_S3_BUCKET", "", Text(str.strip), "The bucket; required with s3."),
    _S("UPLOAD_S3_PREFIX", "local-rag/", Text(_key_prefix), "Put before every object's key."),
    _S("UPLOAD_S3_ENDPOINT_URL", "", Text(_endpoint),
       "The S3 server (MinIO, Ceph...); empty: AWS S3 of UPLOAD_S3_REGION."),
    _S("UPLOAD_S3_REGION", "us-east-1", Text(str.strip), "The bucket's region."),
    _S("UPLOAD_S3_ACCESS_KEY_ID", "", Text(str.strip),
       "With its secret; empty: boto3's own credentials."),
    _S("UPLOAD_S3_SECRET_ACCESS_KEY", "", Text(), "The access key's secret.", secret=True),
    _S("UPLOAD_S3_TIMEOUT_SECONDS", "30", POSITIVE, "Timeout of each request to the bucket."),
    _S("EMBEDDING_PROVIDER", "fake", Text(),
       "One of the embedding providers (core/embedding_providers.py)."),
    _S("EMBEDDING_MODEL", "", Text(),
       "The model; empty: the provider's fixed model.", sample="fake-lexical-v1"),
    _S("EMBEDDING_DIM", str(EMBEDDING_DIM),
       Integer(EMBEDDING_DIM, EMBEDDING_DIM, "{name}={value} is not supported; the schema "
               "stores vector({low}), so it must be {low}"), "Must be 1024."),
    _S("EMBEDDING_DEVICE", "cpu", Choice(EMBEDDING_DEVICES), "Where a local model runs."),
    _S("EMBEDDING_CACHE_DIR", ".cache/embeddings", Folder(resolved=True),
       "Where `rag embeddings warmup` puts model files."),
    _S("EMBEDDING_BATCH_SIZE", "16", Integer(1, message=_AT_LEAST_1),
       "Passages per forward pass of a local model."),
    _S("EMBEDDING_BASE_URL", "", HttpUrls(),
       "openai-compatible: the embedding servers, comma-separated.",
       field="embedding_base_urls"),
    _S("EMBEDDING_API_KEY", "", HeaderText(), "Bearer token of the embedding servers.",
       secret=True),
    _S("EMBEDDING_DIMENSIONS", str(EMBEDDING_DIM), Integer(1, EMBEDDING_DIM),
       "Length of every vector the server returns."),
    _S("EMBEDDING_SEND_DIMENSIONS", "true", Flag(), "Send that length as `dimensions`."),
    _S("EMBEDDING_REMOTE_BATCH_SIZE", "10", Integer(1, 2048), "Texts per request."),
    _S("EMBEDDING_MAX_INPUT_TOKENS", "8192", Integer(16, 1_000_000),
       "Longer texts are cut to this many tokens before they are sent."),
    _S("EMBEDDING_MAX_CONCURRENCY", "4", Integer(1, 64),
       "Requests in flight per server, per process."),
    _S("EMBEDDING_TIMEOUT_SECONDS", "30", POSITIVE, "Limit of one request, retries included."),
    _S("EMBEDDING_MAX_RETRIES", "3", Integer(0, 10), "Retries of a failed request."),
    _S("EMBEDDING_QUERY_INSTRUCTION", "", Text(_escapes_read),
       "Put before every question (never before documents); \\n is a line break."),
    _S("LLM_PROVIDER", "fake", Choice(LLM_PROVIDERS),
       "fake, extractive (offline: quotes the sources' best sentences) or openai-compatible."),
    _S("LLM_BASE_URL", "", Text(), "openai-compatible: the server's base URL."),
    _S("LLM_MODEL", "", Text(), "openai-compatible: the model.", sample="fake-local"),
    _S("LLM_API_KEY", "", HeaderText(), "openai-compatible: the bearer token.", secret=True),
    # The key by reference, resolved as the configuration loads (core/key_refs.py).
    _S("LLM_API_KEY_ENV", "", VariableName(refused=("LLM_API_KEY",)),
       "Instead of LLM_API_KEY: the environment variable that holds the key."),
    _S("LLM_API_KEY_FILE", "", Text(str.strip),
       "Instead of LLM_API_KEY: a file only its owner may read that holds the key."),
    _S("LLM_API_KEY_REQUIRED", "true", Flag(),
       "false: a server on this machine that takes no key (RAG_OUTBOUND_LOCAL_HOSTS)."),
    _S("LLM_TIMEOUT_SECONDS", "30", POSITIVE,
       "Deadline of an answer; of a stream, the longest wait for text."),
    _S("LLM_STREAM_MAX_SECONDS", "300", POSITIVE, "A stream ends after this long in all."),
    _S("LLM_MAX_RETRIES", "2", Integer(0, 10, "{name} must be between {low} and {high}"),
       "Retries of a failed LLM request, within LLM_TIMEOUT_SECONDS."),
    _S("LLM_MAX_CONCURRENCY", "4", Integer(1, message=_AT_LEAST_1),
       "LLM calls running at once per server."),
    _S("LLM_QUEUE_WAIT_SECONDS", "2", Number(0, message="{name} must be 0 or more"),
       "Wait for a free LLM slot before 503 llm_busy."),
    _S("LLM_MAX_RESPONSE_BYTES", "2097152", Integer(1024, message="{name} must be at least {low}"),
       "A larger upstream answer is cut off."),
    _S("RAG_BREAKER_FAILURES", "5", Integer(1, message=_AT_LEAST_1),
       "Consecutive failures of a model server after which calls to it fail fast."),
    _S("RAG_BREAKER_COOLOFF_SECONDS", "30", POSITIVE,
       "How long calls fail fast before one trial request is let through."),
    _S("RAG_OUTBOUND_LOCAL_HOSTS", "localhost,127.0.0.1,::1", HostSet(),
       "Hosts whose servers count as this machine for the outbound policy."),
    _S("RAG_RETRIEVAL", "hybrid", Choice(RETRIEVAL_MODES), "vector, lexical or hybrid."),
    _S("RAG_CANDIDATES", "50", Integer(1, 500), "Candidates per channel before fusion."),
    _S("RAG_RERANK", "", OrNone(Choice(RERANK_PROVIDERS)),
       "The reranker; empty: the embedding provider's default."),
    _S("RAG_FUSION", "convex", Choice(FUSIONS), "convex or rrf."),
    _S("RAG_FUSION_VECTOR_WEIGHT", "", OrNone(Number(0, 1)),
       "Vector weight in convex fusion; empty: the embedding provider's."),
    _S("RERANK_MODEL", "", Text(), "The reranker's folder or model name."),
    _S("RERANK_BASE_URL", "", Text(), "openai-compatible reranker: the server's base URL."),
    _S("RERANK_API_KEY", "", HeaderText(), "openai-compatible reranker: the bearer token.",
       secret=True),
    _S("RERANK_TIMEOUT_SECONDS", "10", POSITIVE, "Limit of one rerank call, retries included."),
    _S("RAG_VECTOR_INDEX", "auto", Choice(VECTOR_INDEXES), "exact, hnsw or auto."),
    _S("RAG_HNSW_MIN_CHUNKS", "20000", Integer(0, 10**9), "Vectors from which auto may use HNSW."),
    _S("RAG_HNSW_TARGET_RECALL", "0.98",
       Number(0, 1, low_open=True, message="{name} must be greater than 0 and at most 1 (a "
              "recall@10 such as 0.98)"), "Recall@10 `rag db index` tunes ef_search to."),
    _S("HNSW_M", "16", Integer(2, 100), "HNSW build parameter m."),
    _S("HNSW_EF_CONSTRUCTION", "128", Integer(4, 1000), "HNSW build parameter ef_construction."),
    _S("HNSW_EF_SEARCH", "100", Integer(1, 1000), "ef_search until a recall is measured."),
    _S("RAG_SEARCH_INDEX", "on", Choice(SEARCH_INDEX_MODES),
       "on: candidates from the search index (index/); off: SQL alone."),
    _S("RAG_SEARCH_INDEX_CANDIDATES", "100", Integer(10, 10_000),
       "Lexical candidates the index proposes per base."),
    _S("RAG_SEARCH_INDEX_DIR", ".local/search-index", Folder(), "Where the indexes are kept.",
       field="search_index_folder"),
    _S("RAG_TOP_K", "5", Integer(*TOP_K_RANGE), "Chunks a search returns by default."),
    _S("RAG_MIN_SIMILARITY", "", OrNone(Number(0, 1)),
       "The answer threshold; empty: the embedding provider's."),
    _S("RAG_REFUSAL", "", OrNone(Choice(REFUSAL_RULES)),
       "threshold or signals; empty: the embedding provider's rule."),
    _S("RAG_CONTEXT_TOKEN_BUDGET", "10000", Integer(1, message=_AT_LEAST_1),
       "Tokens of evidence sent to the model."),
    _S("RAG_CONTEXT_PER_DOCUMENT", "3", Integer(1, 20), "Context blocks of one document at most."),
    _S("RAG_CONTEXT_NEIGHBOURS", "1", Integer(0, 5),
       "Adjacent chunks a block cut inside a table or sentence takes on."),
    _S("RAG_FALLBACK_ENABLED", "false", Flag(), "Allow general-knowledge fallback answers."),
    _S("RAG_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]", Items(), "Host names served."),
    _S("RAG_API_TOKEN", "", HeaderText(), "The operator's bearer token for the API.",
       secret=True),
    _S("RAG_SECRET_KEY", "", SigningKey(SECRET_KEY_MIN_CHARS),
       "Signs sessions; empty: `rag serve` makes one and keeps it in .env.", secret=True),
    _S("RAG_TLS_PROXY", "false", Flag(), "Trust X-Forwarded-Proto from a TLS proxy."),
    _S("RAG_HSTS_SECONDS", "0", Integer(0, 63_072_000), "Strict-Transport-Security max-age."),
    _S("RAG_LOGIN_FAILURE_LIMIT", "5", Integer(1, 1000),
       "Failed sign-ins per account or address before a lock-out."),
    _S("RAG_LOGIN_LOCKOUT_MINUTES", "15", Integer(1, 525_600), "How long a lock-out holds."),
    _S("RAG_TOKEN_FAILURE_LIMIT", "20", Integer(1, 100_000),
       "Bad bearer tokens per address and minute."),
    _S("RAG_STATEMENT_TIMEOUT_SECONDS", "30", POSITIVE,
       "Longest database statement of an API request."),
    _S("RAG_DOCUMENT_MAX_MB", "100", POSITIVE, "Largest PDF, DOCX or TXT file indexed."),
    _S("RAG_DOCUMENT_MAX_CHARS", "2000000", Integer(1000, 1_000_000_000),
       "Characters of one note or document."),
    _S("RAG_DOCUMENT_MAX_PARAGRAPHS", "200000", Integer(1, 100_000_000),
       "Paragraphs of one note or document."),
    _S("RAG_DOCUMENT_MAX_CHUNKS", "20000", Integer(1, 10_000_000), "Chunks of one file."),
    _S("RAG_PDF_MAX_PAGES", "2000", Integer(1, 1_000_000), "Pages of one PDF indexed."),
    _S("RAG_OCR", "auto", Choice(OCR_MODES), "Recognise scanned PDF pages: auto or off."),
    _S("RAG_OCR_MAX_PAGES", "200", Integer(0, 1_000_000),
       "Scanned pages recognised per `rag ingest` run."),
    _S("RAG_OCR_REVIEW_CONFIDENCE", "0.8", Number(0, 1),
       "OCR pages whose mean confidence is below this become review tasks."),
    _S("RAG_WATCH", "false", Flag(), "`rag serve` re-indexes vault files as they change."),
    _S("RAG_MCP_TOKEN", "", HeaderText(strip=True),
       "The API token `rag mcp` acts as; empty: the local operator.", secret=True),
    _S("RAG_TRACE_TEXT", "false", Flag(), "Keep question and answer text in traces."),
    _S("RAG_TRACE_RETENTION_DAYS", "30", _DAYS, "Traces older than this are deleted."),
    _S("RAG_MODEL_PRICES", "", ModelPrices(),
       "JSON: model name -> input_per_1k, output_per_1k, currency; prices traces' tokens."),
    _S("RAG_ANSWER_DISCLAIMER", "", OneLine(500),
       "A line appended to every model-written answer."),
    _S("RAG_AUDIT_RETENTION_DAYS", "365", _DAYS,
       "Audit entries older than this are removed (only by audit_logs_prune())."),
    _S("RAG_CONVERSATION_RETENTION_DAYS", "365", _DAYS,
       "Conversations idle this long are deleted."),
    _S("RAG_CONVERSATION_HISTORY_TURNS", "3", Integer(0, 50),
       "Earlier question-and-answer pairs in the prompt."),
    _S("RAG_CONVERSATION_HISTORY_TOKENS", "1500", Integer(0, 100_000),
       "Tokens of those turns at most."),
    _S("RAG_CONDENSE_TOKEN_BUDGET", "800", Integer(50, 100_000),
       "Conversation tokens the follow-up condensation reads."),
    _S("RAG_CONDENSE_TIMEOUT_SECONDS", "8", POSITIVE, "Deadline of that condensation call."),
)
SETTINGS_BY_NAME: Mapping[str, Setting] = {setting.name: setting for setting in SETTINGS}
SETTINGS_BY_FIELD: Mapping[str, Setting] = {setting.config_field: setting
                                            for setting in SETTINGS}
# Every variable with its code default, in the table's order.
DEFAULTS: Mapping[str, str] = {setting.name: setting.default for setting in SETTINGS}


def settings_parse(raw: Mapping[str, str], *, base: Path) -> dict[str, Any]:
    """Config field -> value of every setting in `raw` (variable -> text), each checked by its
    own parser; relative folders start from `base`."""
    return {setting.config_field: setting.parser.parse(setting.name, raw[setting.name],
                                                       base=base)
            for setting in SETTINGS}
