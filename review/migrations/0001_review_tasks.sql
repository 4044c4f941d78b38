-- The review queue: pages read by OCR below RAG_OCR_REVIEW_CONFIDENCE and detected tables, one
-- task each per document version, with what a maintainer decided.
CREATE TABLE IF NOT EXISTS review_tasks (
  id BIGSERIAL PRIMARY KEY,
  knowledge_base_id BIGINT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  document_version_id BIGINT NOT NULL REFERENCES document_versions(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('ocr_page', 'table')),
  page INTEGER NOT NULL CHECK (page >= 1),
  table_index INTEGER CHECK (table_index >= 0),  -- a table's place on its page
  bbox JSONB,  -- a table's [x0, top, x1, bottom] in PDF points
  rows JSONB,  -- a table's cells, row by row
  extracted_text TEXT NOT NULL,  -- the page's text as this version indexed it
  corrected_text TEXT,  -- a fix: the page's text in the version it builds
  flags JSONB NOT NULL DEFAULT '[]'::jsonb,  -- numbers with units to spot-check
  confidence REAL,  -- an OCR page's mean recogniser confidence, 0-1
  status TEXT NOT NULL DEFAULT 'open'
    CHECK (status IN ('open', 'accepted', 'fixed', 'excluded', 'superseded')),
  job_id BIGINT,  -- the exclusion's or the fix's job
  resolved_by TEXT,
  resolved_at TIMESTAMPTZ,
  note TEXT,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- One task per page (and table) of a version: recording a version twice adds nothing.
CREATE UNIQUE INDEX IF NOT EXISTS idx_review_tasks_place
  ON review_tasks (document_version_id, kind, page, COALESCE(table_index, -1));
CREATE INDEX IF NOT EXISTS idx_review_tasks_queue
  ON review_tasks (knowledge_base_id, status, id);
CREATE INDEX IF NOT EXISTS idx_review_tasks_document ON review_tasks (document_id, page);
