-- BM25 top-k without scoring every candidate (retrieval/lexical.py). Three parts, all written in
-- the chunks' own transaction, so they never drift from the chunks:
-- * chunks.lexical_cells: one lexeme per distinct term of the chunk naming its impact cell
--   (`term~t.d`: term-frequency and chunk-length class, parsing/lexical.py). Its GIN index is
--   an inverted index ordered by impact: search reads the cells that can weigh most first.
--   It also finds every chunk holding a term (all the term's cells), so it replaces the plain
--   index on lexical_terms.
-- * lexical_scope_stats, lexical_length_stats, lexical_term_stats: BM25's statistics per
--   knowledge base (chunk count, term count, chunks per length class, document frequency per
--   term), summed over the caller's bases at query time. Kept by the statement-level triggers
--   of 0012_lexical_statistics_triggers.sql: one pass per statement over the rows it wrote,
--   whatever wrote them.
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS lexical_cells tsvector;
-- The terms and cells a search scores stay in the row (compressed), the content goes out of line
-- first: a candidate costs one heap page instead of TOAST lookups (about 25% of a lexical
-- search at 100k chunks, bench/scale.py). Applies to rows written from now on.
ALTER TABLE chunks ALTER COLUMN lexical_terms SET STORAGE MAIN,
  ALTER COLUMN lexical_cells SET STORAGE MAIN, ALTER COLUMN content SET STORAGE EXTERNAL;
CREATE INDEX IF NOT EXISTS idx_chunks_lexical_cells ON chunks USING gin (lexical_cells);
DROP INDEX IF EXISTS idx_chunks_lexical_terms;
-- Identifiers inside longer tokens are narrowed through the cells of their parts
-- (retrieval/sql.py): the trigram index cost a fifth of the ingest and is no longer read.
DROP INDEX IF EXISTS idx_chunks_content_trgm;
CREATE INDEX IF NOT EXISTS idx_chunks_lexical_stale_v3 ON chunks (id)
  WHERE lexical_version IS DISTINCT FROM 3;
DROP INDEX IF EXISTS idx_chunks_lexical_stale_v2;

CREATE TABLE IF NOT EXISTS lexical_scope_stats (
  knowledge_base_id BIGINT PRIMARY KEY REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  chunk_count BIGINT NOT NULL,
  term_count BIGINT NOT NULL
);
-- Chunks per length class (parsing/lexical.py DL_CELL_LOWER, 0-based): a class without chunks
-- in the caller's bases has no cell that could still add to a score.
CREATE TABLE IF NOT EXISTS lexical_length_stats (
  knowledge_base_id BIGINT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  length_cell SMALLINT NOT NULL,
  chunk_count BIGINT NOT NULL,
  PRIMARY KEY (knowledge_base_id, length_cell)
);
CREATE TABLE IF NOT EXISTS lexical_term_stats (
  knowledge_base_id BIGINT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  term TEXT NOT NULL,
  df INTEGER NOT NULL,
  PRIMARY KEY (knowledge_base_id, term)
);
-- Terms no chunk holds any more, found without reading the table.
CREATE INDEX IF NOT EXISTS idx_lexical_term_stats_unused ON lexical_term_stats (knowledge_base_id)
  WHERE df <= 0;
