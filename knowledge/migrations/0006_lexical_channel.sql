-- Lexical channel (BM25). The terms are made by parsing/lexical.py and stored as a ready
-- tsvector: no text-search configuration of PostgreSQL can split Chinese. Chunks written
-- before these columns existed keep NULL until the next `rag ingest` fills them in.
-- pg_trgm is a trusted extension: the database's owner may create it without a superuser.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

ALTER TABLE chunks ADD COLUMN IF NOT EXISTS lexical_terms tsvector;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS lexical_length INTEGER;

-- The terms are found through the GIN index of the impact cells (0011), not one of their own.
-- Finds the chunks still to fill without reading the table; empty once every chunk is filled.
CREATE INDEX IF NOT EXISTS idx_chunks_lexical_missing ON chunks (id) WHERE lexical_terms IS NULL;
-- The analyzer that made a chunk's terms (parsing/lexical.py ANALYZER_VERSION; NULL: before
-- versions were recorded). Chunks of an older analyzer are re-analysed, vectors untouched, by
-- `rag ingest` and `rag db init`; a partial index (idx_chunks_lexical_stale_v3 of 0011, with the
-- impact cells) finds them without reading the table (its literal is the current version:
-- knowledge/store_sql.py CHUNKS_LEXICAL_STALE uses the same).
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS lexical_version SMALLINT;

-- The whole index's lexical statistics: one row, kept current in the same transaction as the
-- chunks by the triggers of 0012_lexical_statistics_triggers.sql. (Search computes BM25's statistics over the caller's
-- knowledge bases instead, see retrieval/sql.py; this row stays as the index-wide summary.)
CREATE TABLE IF NOT EXISTS lexical_stats (
  id BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
  chunk_count BIGINT NOT NULL CHECK (chunk_count >= 0),
  term_count BIGINT NOT NULL CHECK (term_count >= 0)
);

INSERT INTO lexical_stats (id, chunk_count, term_count)
SELECT true, count(*), coalesce(sum(lexical_length), 0) FROM chunks
WHERE lexical_terms IS NOT NULL
ON CONFLICT (id) DO NOTHING;
