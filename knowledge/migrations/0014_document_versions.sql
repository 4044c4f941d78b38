-- Document versions: every build of a document that became active, with what built it.
CREATE TABLE IF NOT EXISTS document_versions (
  id BIGSERIAL PRIMARY KEY,
  document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  content_hash TEXT NOT NULL,
  config_hash TEXT NOT NULL,  -- parser, chunker and embedding configuration
  config JSONB NOT NULL DEFAULT '{}'::jsonb,
  status TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'failed')),
  chunk_count INTEGER NOT NULL DEFAULT 0,
  vector_count INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  activated_at TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS idx_document_versions_document ON document_versions (document_id, id);
ALTER TABLE documents ADD COLUMN IF NOT EXISTS active_version_id BIGINT
  REFERENCES document_versions(id) ON DELETE SET NULL;
