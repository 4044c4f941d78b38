-- Bad bearer tokens per client address and minute (access/throttling.py): once an address
-- passes RAG_TOKEN_FAILURE_LIMIT in a minute, its tokens are not even looked at until the minute
-- ends. One row per address, reset when a new minute begins; rows of past minutes are dropped.
CREATE TABLE IF NOT EXISTS token_failures (
    address TEXT PRIMARY KEY,
    window_start TIMESTAMPTZ NOT NULL,
    failures INTEGER NOT NULL
);
