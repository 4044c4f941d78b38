"""Every setting with its code default, and the values some of them allow: the table that
`.env.sample` follows key for key and that core/config.py validates against."""

from __future__ import annotations

EMBEDDING_DIM = 1024  # the schema stores vector(1024)
LLM_PROVIDERS = ("fake", "openai-compatible")
RETRIEVAL_MODES = ("vector", "lexical", "hybrid")
RERANK_PROVIDERS = ("none", "features", "cross-encoder", "openai-compatible")
FUSIONS = ("convex", "rrf")
VECTOR_INDEXES = ("exact", "hnsw", "auto")
SEARCH_INDEX_MODES = ("on", "off")
OCR_MODES = ("auto", "off")
REFUSAL_RULES = ("threshold", "signals")  # answering/refusal.py
TOP_K_RANGE = (1, 20)
MAX_TEXT_CHARS = 4000  # longest query / question accepted by the API, the CLI and the services

# Every key of `.env.sample`, in its order, with the code default. LLM_MODEL, LLM_BASE_URL and
# LLM_API_KEY default to empty so a missing value with openai-compatible is detectable.
DEFAULTS: dict[str, str] = {
    "POSTGRES_DB": "local_rag",
    "POSTGRES_USER": "local_rag",
    "POSTGRES_PASSWORD": "local_rag",
    "DATABASE_URL": "postgresql://local_rag:local_rag@localhost:5432/local_rag",
    "TEST_DATABASE_URL": "postgresql://local_rag:local_rag@localhost:5432/local_rag_test",
    "DATABASE_REPLICA_URLS": "",  # replicas that searches may read from (core/replicas.py)
    "RAG_REPLICA_MAX_LAG_SECONDS": "5",
    "RAG_REPLICA_CHECK_SECONDS": "2",
    "VAULT_PATH": "samples/acme-vault",
    "UPLOAD_DIR": ".local/uploads",
    # UPLOAD_STORE=s3: uploads are kept in a bucket, UPLOAD_DIR is each machine's cache of it
    # (knowledge/upload_store.py).
    "UPLOAD_STORE": "folder",
    "UPLOAD_S3_BUCKET": "",
    "UPLOAD_S3_PREFIX": "local-rag/",
    "UPLOAD_S3_ENDPOINT_URL": "",  # MinIO, Ceph, ...; empty: AWS S3 of UPLOAD_S3_REGION
    "UPLOAD_S3_REGION": "us-east-1",
    "UPLOAD_S3_ACCESS_KEY_ID": "",  # empty: boto3's own chain (AWS_* variables, instance role)
    "UPLOAD_S3_SECRET_ACCESS_KEY": "",
    "UPLOAD_S3_TIMEOUT_SECONDS": "30",
    "EMBEDDING_PROVIDER": "fake",
    "EMBEDDING_MODEL": "",  # resolved to the provider's fixed model when unset everywhere
    "EMBEDDING_DIM": str(EMBEDDING_DIM),
    "EMBEDDING_DEVICE": "cpu",
    "EMBEDDING_CACHE_DIR": ".cache/embeddings",
    "EMBEDDING_BATCH_SIZE": "16",
    # EMBEDDING_PROVIDER=openai-compatible (embeddings/remote.py).
    "EMBEDDING_BASE_URL": "",  # one server or several, comma-separated
    "EMBEDDING_API_KEY": "",
    "EMBEDDING_DIMENSIONS": str(EMBEDDING_DIM),  # the length every returned vector must have
    "EMBEDDING_SEND_DIMENSIONS": "true",  # send it as `dimensions` (Matryoshka models)
    "EMBEDDING_REMOTE_BATCH_SIZE": "10",
    "EMBEDDING_MAX_INPUT_TOKENS": "8192",
    "EMBEDDING_MAX_CONCURRENCY": "4",  # requests in flight per server, per process
    "EMBEDDING_TIMEOUT_SECONDS": "30",
    "EMBEDDING_MAX_RETRIES": "3",
    "EMBEDDING_QUERY_INSTRUCTION": "",  # put before each question, e.g. a model's query prompt
    "LLM_PROVIDER": "fake",
    "LLM_BASE_URL": "",
    "LLM_MODEL": "",
    "LLM_API_KEY": "",
    "LLM_TIMEOUT_SECONDS": "30",
    "LLM_STREAM_MAX_SECONDS": "300",
    "LLM_MAX_RETRIES": "2",
    "LLM_MAX_CONCURRENCY": "4",
    "LLM_QUEUE_WAIT_SECONDS": "2",
    "LLM_MAX_RESPONSE_BYTES": "2097152",
    # Hosts whose servers count as this machine for the knowledge bases' outbound policy.
    "RAG_OUTBOUND_LOCAL_HOSTS": "localhost,127.0.0.1,::1",
    "RAG_RETRIEVAL": "hybrid",
    "RAG_CANDIDATES": "50",
    "RAG_RERANK": "",  # unset: the embedding provider's default_rerank
    "RAG_FUSION": "convex",
    "RAG_FUSION_VECTOR_WEIGHT": "",  # unset: the embedding provider's fitted weight
    "RERANK_MODEL": "",
    "RERANK_BASE_URL": "",
    "RERANK_API_KEY": "",
    "RERANK_TIMEOUT_SECONDS": "10",
    "RAG_VECTOR_INDEX": "auto",
    "RAG_HNSW_MIN_CHUNKS": "20000",
    "RAG_HNSW_TARGET_RECALL": "0.98",
    "HNSW_M": "16",
    "HNSW_EF_CONSTRUCTION": "128",
    "HNSW_EF_SEARCH": "100",
    # The search index that ranks candidates (index/): on, or off (every search in SQL).
    "RAG_SEARCH_INDEX": "on",
    "RAG_SEARCH_INDEX_CANDIDATES": "100",
    "RAG_SEARCH_INDEX_DIR": ".local/search-index",
    "RAG_TOP_K": "5",
    "RAG_MIN_SIMILARITY": "",
    "RAG_REFUSAL": "",  # unset: the rule fitted for the embedding provider (answering/refusal.py)
    "RAG_CONTEXT_TOKEN_BUDGET": "10000",
    "RAG_CONTEXT_PER_DOCUMENT": "3",
    "RAG_CONTEXT_NEIGHBOURS": "1",
    "RAG_FALLBACK_ENABLED": "false",
    "RAG_ALLOWED_HOSTS": "localhost,127.0.0.1,[::1]",
    "RAG_API_TOKEN": "",
    "RAG_SECRET_KEY": "",  # unset: `rag serve` makes one and keeps it in `.env`
    "RAG_TLS_PROXY": "false",
    "RAG_HSTS_SECONDS": "0",
    "RAG_LOGIN_FAILURE_LIMIT": "5",
    "RAG_LOGIN_LOCKOUT_MINUTES": "15",
    "RAG_TOKEN_FAILURE_LIMIT": "20",
    "RAG_STATEMENT_TIMEOUT_SECONDS": "30",
    "RAG_DOCUMENT_MAX_MB": "100",
    "RAG_DOCUMENT_MAX_CHARS": "2000000",
    "RAG_DOCUMENT_MAX_PARAGRAPHS": "200000",
    "RAG_DOCUMENT_MAX_CHUNKS": "20000",
    "RAG_PDF_MAX_PAGES": "2000",
    "RAG_OCR": "auto",
    "RAG_OCR_MAX_PAGES": "200",
    "RAG_WATCH": "false",
    "RAG_MCP_TOKEN": "",
    "RAG_TRACE_TEXT": "false",
    "RAG_TRACE_RETENTION_DAYS": "30",
    "RAG_ANSWER_DISCLAIMER": "",  # a line the server appends to every model-written answer
    "RAG_CONVERSATION_RETENTION_DAYS": "365",
    "RAG_CONVERSATION_HISTORY_TURNS": "3",
    "RAG_CONVERSATION_HISTORY_TOKENS": "1500",
    "RAG_CONDENSE_TOKEN_BUDGET": "800",
    "RAG_CONDENSE_TIMEOUT_SECONDS": "8",
}
# Shown as <set> or <unset>, never as their value.
SECRET_KEYS = frozenset({"LLM_API_KEY", "RAG_API_TOKEN", "RERANK_API_KEY", "RAG_MCP_TOKEN",
                         "RAG_SECRET_KEY", "EMBEDDING_API_KEY",
                         "UPLOAD_S3_SECRET_ACCESS_KEY"})
SECRET_KEY_MIN_CHARS = 32
EMBEDDING_DEVICES = ("cpu", "cuda", "mps")
