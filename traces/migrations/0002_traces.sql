-- A trace of every search and answer (traces/recording.py): who asked (a user or token id and
-- a label, never a secret), in which knowledge bases, with which retrieval parameters, how long
-- each stage took, which models, how many tokens, and which chunks (with their content hashes)
-- were cited under which prompt version: enough to reproduce or audit an answer. The question
-- and the answer are kept only with RAG_TRACE_TEXT=true. Pruned after RAG_TRACE_RETENTION_DAYS.
CREATE TABLE IF NOT EXISTS traces (
  id UUID PRIMARY KEY,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  operation TEXT NOT NULL,  -- search, ask, ask_stream
  channel TEXT NOT NULL,  -- api, cli, mcp, workbench
  caller TEXT NOT NULL DEFAULT '',
  user_id INTEGER,
  token_id BIGINT,
  knowledge_base_ids BIGINT[] NOT NULL DEFAULT ARRAY[]::bigint[],
  status TEXT NOT NULL DEFAULT 'ok',  -- ok or error
  error_code TEXT,
  mode TEXT,  -- the answer's mode (rag, no_answer, fallback), or the retrieval mode of a search
  parameters JSONB NOT NULL DEFAULT '{}'::jsonb,  -- the effective retrieval parameters
  timings_ms JSONB NOT NULL DEFAULT '{}'::jsonb,  -- embed, vector, lexical, fuse, rerank,
                                                   -- llm_first_token, llm_total, total
  embedding_model TEXT,
  llm_model TEXT,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  prompt_version TEXT,
  citations JSONB NOT NULL DEFAULT '[]'::jsonb,  -- [{chunk_id, content_hash}] in block order
  question TEXT,
  answer TEXT
);
CREATE INDEX IF NOT EXISTS idx_traces_created_at ON traces (created_at);
