-- Every document and every chunk carries its knowledge base, so each retrieval query filters
-- on the chunk row itself (knowledge_base_id = ANY(...)), inside the SQL.
--   status         active (searchable), queued (an upload waiting for its job), deleting (out
--                  of search; its file is being removed by a job)
--   original_name  an upload's file name as the client sent it (never used as a path)
--   source_name    an upload's source: the name it is cited by (results, citations, traces,
--                  pages), original_name made safe and unique within its base
--                  (knowledge/upload_names.py); its chunks' relative_path. NULL for a vault's
--                  documents; for an upload stored before it, `rag db init` names it.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS knowledge_base_id BIGINT REFERENCES knowledge_bases(id);
ALTER TABLE documents ADD COLUMN IF NOT EXISTS status TEXT NOT NULL DEFAULT 'active';
ALTER TABLE documents ADD COLUMN IF NOT EXISTS original_name TEXT;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS source_name TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS idx_documents_source_name ON documents
  (knowledge_base_id, lower(source_name)) WHERE source_name IS NOT NULL;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS knowledge_base_id BIGINT REFERENCES knowledge_bases(id);
CREATE INDEX IF NOT EXISTS idx_documents_knowledge_base ON documents (knowledge_base_id);
CREATE INDEX IF NOT EXISTS idx_chunks_knowledge_base ON chunks (knowledge_base_id);
-- BM25's corpus statistics over the caller's bases (retrieval/sql.py): an index-only scan.
CREATE INDEX IF NOT EXISTS idx_chunks_knowledge_base_lexical ON chunks (knowledge_base_id)
  INCLUDE (lexical_length) WHERE lexical_terms IS NOT NULL;
