-- local-rag schema: the single source of truth for the RAG tables.
-- Applied by `rag db init` (idempotent) and mounted by docker-compose.yml as an init script.
-- Every statement is idempotent.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS documents (
  id BIGSERIAL PRIMARY KEY,
  vault_path TEXT NOT NULL,
  file_path TEXT NOT NULL,
  relative_path TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  mtime_ns BIGINT,
  size_bytes BIGINT,
  frontmatter JSONB NOT NULL DEFAULT '{}'::jsonb,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (vault_path, relative_path)
);

CREATE TABLE IF NOT EXISTS chunks (
  id BIGSERIAL PRIMARY KEY,
  document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  chunk_index INTEGER NOT NULL,
  content TEXT NOT NULL,
  file_path TEXT NOT NULL,
  relative_path TEXT NOT NULL,
  heading_path TEXT[] NOT NULL DEFAULT ARRAY[]::text[],
  frontmatter JSONB NOT NULL DEFAULT '{}'::jsonb,
  tags TEXT[] NOT NULL DEFAULT ARRAY[]::text[],
  wikilinks TEXT[] NOT NULL DEFAULT ARRAY[]::text[],
  metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
  content_hash TEXT NOT NULL,
  token_count INTEGER,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (document_id, chunk_index)
);

CREATE TABLE IF NOT EXISTS embeddings (
  id BIGSERIAL PRIMARY KEY,
  chunk_id BIGINT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
  embedding_provider TEXT NOT NULL,
  embedding_model TEXT NOT NULL,
  embedding_dim INTEGER NOT NULL CHECK (embedding_dim = 1024),
  embedding vector(1024) NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (chunk_id, embedding_provider, embedding_model, embedding_dim)
);

CREATE TABLE IF NOT EXISTS ingest_runs (
  id BIGSERIAL PRIMARY KEY,
  vault_path TEXT NOT NULL,
  embedding_provider TEXT NOT NULL,
  embedding_model TEXT NOT NULL,
  embedding_dim INTEGER NOT NULL CHECK (embedding_dim = 1024),
  status TEXT NOT NULL CHECK (status IN ('running', 'success', 'failed')),
  started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  finished_at TIMESTAMPTZ,
  documents_added INTEGER NOT NULL DEFAULT 0,
  documents_updated INTEGER NOT NULL DEFAULT 0,
  documents_deleted INTEGER NOT NULL DEFAULT 0,
  documents_skipped INTEGER NOT NULL DEFAULT 0,
  chunks_written INTEGER NOT NULL DEFAULT 0,
  embeddings_written INTEGER NOT NULL DEFAULT 0,
  error_summary TEXT,
  metadata JSONB NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX IF NOT EXISTS idx_documents_content_hash ON documents (content_hash);
CREATE INDEX IF NOT EXISTS idx_chunks_document_id ON chunks (document_id);
CREATE INDEX IF NOT EXISTS idx_chunks_relative_path ON chunks (relative_path);
CREATE INDEX IF NOT EXISTS idx_chunks_content_hash ON chunks (content_hash);
CREATE INDEX IF NOT EXISTS idx_embeddings_config
  ON embeddings (embedding_provider, embedding_model, embedding_dim);

-- Lexical channel (BM25). The terms are made by parsing/lexical.py and stored as a ready
-- tsvector: no text-search configuration of PostgreSQL can split Chinese. Chunks written
-- before these columns existed keep NULL until the next `rag ingest` fills them in.
-- pg_trgm is a trusted extension: the database's owner may create it without a superuser.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

ALTER TABLE chunks ADD COLUMN IF NOT EXISTS lexical_terms tsvector;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS lexical_length INTEGER;

-- The terms are found through the GIN index of the impact cells (below), not one of their own.
-- Finds the chunks still to fill without reading the table; empty once every chunk is filled.
CREATE INDEX IF NOT EXISTS idx_chunks_lexical_missing ON chunks (id) WHERE lexical_terms IS NULL;
-- The analyzer that made a chunk's terms (parsing/lexical.py ANALYZER_VERSION; NULL: before
-- versions were recorded). Chunks of an older analyzer are re-analysed, vectors untouched, by
-- `rag ingest` and `rag db init`; a partial index (idx_chunks_lexical_stale_v3, below, with the
-- impact cells) finds them without reading the table (its literal is the current version:
-- knowledge/sql.py CHUNKS_LEXICAL_STALE uses the same).
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS lexical_version SMALLINT;

-- The whole index's lexical statistics: one row, kept current by the triggers below in the
-- same transaction as the chunks. (Search computes BM25's statistics over the caller's
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

-- Statement-level triggers with transition tables: one update of the row per statement, and
-- they also see chunks removed by the cascade from documents (`rag vault forget`, pruning; one
-- firing for all the chunks of one DELETE on documents).
-- A statement that changes no lexical terms leaves the row alone (and unlocked).
CREATE OR REPLACE FUNCTION lexical_stats_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  added_chunks BIGINT := 0;
  added_terms BIGINT := 0;
  removed_chunks BIGINT := 0;
  removed_terms BIGINT := 0;
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    SELECT count(*), coalesce(sum(lexical_length), 0) INTO added_chunks, added_terms
    FROM lexical_new WHERE lexical_terms IS NOT NULL;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    SELECT count(*), coalesce(sum(lexical_length), 0) INTO removed_chunks, removed_terms
    FROM lexical_old WHERE lexical_terms IS NOT NULL;
  END IF;
  IF added_chunks <> removed_chunks OR added_terms <> removed_terms THEN
    UPDATE lexical_stats SET chunk_count = chunk_count + added_chunks - removed_chunks,
                             term_count = term_count + added_terms - removed_terms;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION lexical_stats_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE lexical_stats SET chunk_count = 0, term_count = 0;
  RETURN NULL;
END
$$;

-- PostgreSQL allows transition tables only on triggers for a single event: one trigger each.
CREATE OR REPLACE TRIGGER chunks_lexical_stats_insert AFTER INSERT ON chunks
  REFERENCING NEW TABLE AS lexical_new
  FOR EACH STATEMENT EXECUTE FUNCTION lexical_stats_track();
CREATE OR REPLACE TRIGGER chunks_lexical_stats_update AFTER UPDATE ON chunks
  REFERENCING OLD TABLE AS lexical_old NEW TABLE AS lexical_new
  FOR EACH STATEMENT EXECUTE FUNCTION lexical_stats_track();
CREATE OR REPLACE TRIGGER chunks_lexical_stats_delete AFTER DELETE ON chunks
  REFERENCING OLD TABLE AS lexical_old
  FOR EACH STATEMENT EXECUTE FUNCTION lexical_stats_track();
-- TRUNCATE fires no DELETE trigger (and allows no transition table); it empties the table.
CREATE OR REPLACE TRIGGER chunks_lexical_stats_truncate AFTER TRUNCATE ON chunks
  FOR EACH STATEMENT EXECUTE FUNCTION lexical_stats_reset();

-- Vectors inline (PLAIN) instead of pgvector's default EXTERNAL: a vector(1024) is 4 KB, over
-- the ~2 KB TOAST threshold, so EXTERNAL keeps every one out of line and the exact scan paid a
-- TOAST index probe plus three chunk reads per vector (~3–4 µs: 280–460 ms at 100k vectors;
-- inline 150–180 ms, and 10 vs 34 ms at 10k; bench/ann.py --storage). The cost: one row per
-- 8 KB page (the heap grows ~1.5×) and scans of this table that do not need the vector read
-- those pages too. Values and results are unchanged. Only rows written from now on move inline;
-- `VACUUM FULL embeddings` (which locks the table while it runs) rewrites the existing ones.
-- A row must fit in one page this way: revisit before storing vectors of over ~2,000 floats.
-- Altered only when needed: SET STORAGE takes an exclusive lock on the table.
DO $$
BEGIN
  IF (SELECT attstorage FROM pg_attribute
      WHERE attrelid = 'embeddings'::regclass AND attname = 'embedding') <> 'p' THEN
    ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE PLAIN;
  END IF;
END
$$;

-- Documents beyond Markdown (PDF, DOCX, TXT; parsing/formats/). Existing rows are notes, so
-- `format` defaults to 'markdown'; every other column is nullable or defaulted, and an insert
-- naming only the first release's columns keeps working.
--   title           the PDF's or DOCX's metadata title, else the file name without extension
--   page_count      pages of a PDF (NULL where a format has no reliable pages: notes, DOCX, TXT)
--   ocr_page_count  pages whose text came from OCR
--   metadata        per-format facts: extractor, outline, OCR pages and their mean confidence,
--                   pages left out (no OCR installed, per-run OCR cap, page limit)
ALTER TABLE documents ADD COLUMN IF NOT EXISTS format TEXT NOT NULL DEFAULT 'markdown';
ALTER TABLE documents ADD COLUMN IF NOT EXISTS title TEXT;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS page_count INTEGER;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS ocr_page_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS metadata JSONB NOT NULL DEFAULT '{}'::jsonb;

-- The pages a chunk's text comes from, 1-based as a PDF viewer's page counter shows them;
-- NULL for formats without pages (notes, DOCX, TXT).
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS page_start INTEGER;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS page_end INTEGER;

-- Knowledge bases. A knowledge base has sources: vault folders an operator registered, and its
-- own upload area. A source's path is the canonical folder, the very value documents.vault_path
-- holds for its documents, so a document belongs to one source and through it to one base.
CREATE TABLE IF NOT EXISTS knowledge_bases (
  id BIGSERIAL PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS knowledge_base_sources (
  id BIGSERIAL PRIMARY KEY,
  knowledge_base_id BIGINT NOT NULL REFERENCES knowledge_bases(id) ON DELETE RESTRICT,
  kind TEXT NOT NULL CHECK (kind IN ('vault', 'uploads')),
  path TEXT NOT NULL UNIQUE,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_kb_sources_knowledge_base ON knowledge_base_sources (knowledge_base_id);

-- Whether a base's text may leave this machine (embeddings/outbound.py): `local-only` (the
-- default for every base created from now on) or `allowed`. Bases that existed before the
-- policy keep what they did then, `allowed`; this runs before `default` is first inserted, so
-- a new installation's `default` is local-only.
ALTER TABLE knowledge_bases ADD COLUMN IF NOT EXISTS outbound TEXT;
UPDATE knowledge_bases SET outbound = 'allowed' WHERE outbound IS NULL;
ALTER TABLE knowledge_bases ALTER COLUMN outbound SET DEFAULT 'local-only';
ALTER TABLE knowledge_bases ALTER COLUMN outbound SET NOT NULL;
DO $$ BEGIN
  ALTER TABLE knowledge_bases ADD CONSTRAINT knowledge_bases_outbound_check
    CHECK (outbound IN ('local-only', 'allowed'));
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;

INSERT INTO knowledge_bases (slug, name, description)
VALUES ('default', 'Default', 'Vaults ingested without a knowledge base of their own.')
ON CONFLICT (slug) DO NOTHING;

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
--   below: one pass per statement over the rows it wrote, whatever wrote them.
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

-- The length class of a chunk of `length` terms: parsing/lexical.py DL_CELL_LOWER, whose
-- values tests/knowledge/test_lexical_cells.py checks against these.
CREATE OR REPLACE FUNCTION lexical_length_cell(length INTEGER) RETURNS SMALLINT
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT greatest(width_bucket(length, ARRAY[1, 9, 13, 19, 28, 41, 61, 91, 136, 201, 301, 451,
                                              676, 1001, 1501, 2251, 3376, 5064]) - 1, 0)::int2
$$;

-- The impact cells of a chunk's stored terms, as parsing/lexical.py makes them (the
-- frequency classes of TF_CELL_UPPER, headings counted HEADING_WEIGHT = 3 times):
-- tests/knowledge/test_lexical_cells.py checks that both agree. The ingest writes the cells it
-- made; this fills them for any other writer of lexical_terms.
CREATE OR REPLACE FUNCTION lexical_cells_make(terms TSVECTOR, length INTEGER) RETURNS TSVECTOR
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT array_to_tsvector(coalesce(array_agg(
           u.lexeme || '~' || width_bucket(
             cardinality(u.positions) + 2 * cardinality(array_positions(u.weights, 'B')),
             ARRAY[2, 3, 4, 5, 7, 10, 15]) || '.' || lexical_length_cell(length)),
         ARRAY[]::text[]))
  FROM unnest(terms) AS u
$$;

CREATE OR REPLACE FUNCTION chunks_lexical_cells_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.lexical_cells := lexical_cells_make(NEW.lexical_terms, NEW.lexical_length);
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER chunks_lexical_cells_insert BEFORE INSERT ON chunks
  FOR EACH ROW WHEN (NEW.lexical_terms IS NOT NULL AND NEW.lexical_cells IS NULL)
  EXECUTE FUNCTION chunks_lexical_cells_fill();
CREATE OR REPLACE TRIGGER chunks_lexical_cells_update BEFORE UPDATE ON chunks
  FOR EACH ROW WHEN (NEW.lexical_terms IS NOT NULL
                     AND (NEW.lexical_terms IS DISTINCT FROM OLD.lexical_terms
                          OR NEW.lexical_length IS DISTINCT FROM OLD.lexical_length)
                     AND NEW.lexical_cells IS NOT DISTINCT FROM OLD.lexical_cells)
  EXECUTE FUNCTION chunks_lexical_cells_fill();

-- Adds (sign 1) or removes (sign -1) the contributions of updated chunks. Additions upsert; removals only
-- update rows that exist. Rows are taken in key order, so two writers of one base never wait
-- on each other in opposite orders.
CREATE OR REPLACE FUNCTION lexical_scope_stats_apply(kb_ids BIGINT[], terms TSVECTOR[],
                                                     lengths INTEGER[], sign INTEGER)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF sign > 0 THEN
    INSERT INTO lexical_scope_stats AS s (knowledge_base_id, chunk_count, term_count)
    SELECT r.kb, count(*), coalesce(sum(r.length), 0)
    FROM unnest(kb_ids, terms, lengths) AS r(kb, terms, length)
    WHERE r.kb IS NOT NULL AND r.terms IS NOT NULL
    GROUP BY r.kb ORDER BY r.kb
    ON CONFLICT (knowledge_base_id) DO UPDATE
      SET chunk_count = s.chunk_count + excluded.chunk_count,
          term_count = s.term_count + excluded.term_count;
    INSERT INTO lexical_length_stats AS s (knowledge_base_id, length_cell, chunk_count)
    SELECT r.kb, lexical_length_cell(r.length), count(*)
    FROM unnest(kb_ids, terms, lengths) AS r(kb, terms, length)
    WHERE r.kb IS NOT NULL AND r.terms IS NOT NULL
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, length_cell) DO UPDATE
      SET chunk_count = s.chunk_count + excluded.chunk_count;
    INSERT INTO lexical_term_stats AS s (knowledge_base_id, term, df)
    SELECT r.kb, t.term, count(*)
    FROM unnest(kb_ids, terms) AS r(kb, terms)
    CROSS JOIN LATERAL unnest(tsvector_to_array(r.terms)) AS t(term)
    WHERE r.kb IS NOT NULL
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, term) DO UPDATE SET df = s.df + excluded.df;
  ELSE
    UPDATE lexical_scope_stats s SET chunk_count = s.chunk_count - r.chunks,
                                     term_count = s.term_count - r.length
    FROM (SELECT r.kb, count(*) AS chunks, coalesce(sum(r.length), 0) AS length
          FROM unnest(kb_ids, terms, lengths) AS r(kb, terms, length)
          WHERE r.kb IS NOT NULL AND r.terms IS NOT NULL
          GROUP BY r.kb ORDER BY r.kb) r
    WHERE s.knowledge_base_id = r.kb;
    UPDATE lexical_length_stats s SET chunk_count = s.chunk_count - r.chunks
    FROM (SELECT r.kb, lexical_length_cell(r.length) AS length_cell, count(*) AS chunks
          FROM unnest(kb_ids, terms, lengths) AS r(kb, terms, length)
          WHERE r.kb IS NOT NULL AND r.terms IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, 2) r
    WHERE s.knowledge_base_id = r.kb AND s.length_cell = r.length_cell;
    UPDATE lexical_term_stats s SET df = s.df - r.df
    FROM (SELECT r.kb, t.term, count(*) AS df
          FROM unnest(kb_ids, terms) AS r(kb, terms)
          CROSS JOIN LATERAL unnest(tsvector_to_array(r.terms)) AS t(term)
          WHERE r.kb IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, 2) r
    WHERE s.knowledge_base_id = r.kb AND s.term = r.term;
    DELETE FROM lexical_term_stats
    WHERE knowledge_base_id = ANY(kb_ids) AND df <= 0;
  END IF;
END
$$;

-- INSERT and DELETE aggregate the transition table directly (no copy of the rows' terms into
-- arrays: that copy cost as much as the counting). UPDATE: only rows whose terms, length or
-- base changed count (their old version out, their new one in); an update of other columns
-- costs a join and nothing more.
CREATE OR REPLACE FUNCTION lexical_scope_stats_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kb_ids BIGINT[];
  terms TSVECTOR[];
  lengths INTEGER[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO lexical_scope_stats AS s (knowledge_base_id, chunk_count, term_count)
    SELECT n.knowledge_base_id, count(*), coalesce(sum(n.lexical_length), 0)
    FROM lexical_new n
    WHERE n.lexical_terms IS NOT NULL AND n.knowledge_base_id IS NOT NULL
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (knowledge_base_id) DO UPDATE
      SET chunk_count = s.chunk_count + excluded.chunk_count,
          term_count = s.term_count + excluded.term_count;
    INSERT INTO lexical_length_stats AS s (knowledge_base_id, length_cell, chunk_count)
    SELECT n.knowledge_base_id, lexical_length_cell(n.lexical_length), count(*)
    FROM lexical_new n
    WHERE n.lexical_terms IS NOT NULL AND n.knowledge_base_id IS NOT NULL
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, length_cell) DO UPDATE
      SET chunk_count = s.chunk_count + excluded.chunk_count;
    INSERT INTO lexical_term_stats AS s (knowledge_base_id, term, df)
    SELECT n.knowledge_base_id, t.term, count(*)
    FROM lexical_new n CROSS JOIN LATERAL unnest(tsvector_to_array(n.lexical_terms)) AS t(term)
    WHERE n.knowledge_base_id IS NOT NULL
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (knowledge_base_id, term) DO UPDATE SET df = s.df + excluded.df;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE lexical_scope_stats s SET chunk_count = s.chunk_count - r.chunks,
                                     term_count = s.term_count - r.length
    FROM (SELECT o.knowledge_base_id AS kb, count(*) AS chunks,
                 coalesce(sum(o.lexical_length), 0) AS length
          FROM lexical_old o
          WHERE o.lexical_terms IS NOT NULL AND o.knowledge_base_id IS NOT NULL
          GROUP BY 1 ORDER BY 1) r
    WHERE s.knowledge_base_id = r.kb;
    UPDATE lexical_length_stats s SET chunk_count = s.chunk_count - r.chunks
    FROM (SELECT o.knowledge_base_id AS kb, lexical_length_cell(o.lexical_length) AS length_cell,
                 count(*) AS chunks
          FROM lexical_old o
          WHERE o.lexical_terms IS NOT NULL AND o.knowledge_base_id IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, 2) r
    WHERE s.knowledge_base_id = r.kb AND s.length_cell = r.length_cell;
    UPDATE lexical_term_stats s SET df = s.df - r.df
    FROM (SELECT o.knowledge_base_id AS kb, t.term, count(*) AS df
          FROM lexical_old o
          CROSS JOIN LATERAL unnest(tsvector_to_array(o.lexical_terms)) AS t(term)
          WHERE o.knowledge_base_id IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, 2) r
    WHERE s.knowledge_base_id = r.kb AND s.term = r.term;
    DELETE FROM lexical_term_stats
    WHERE knowledge_base_id IN (SELECT DISTINCT knowledge_base_id FROM lexical_old) AND df <= 0;
  ELSE
    SELECT array_agg(n.knowledge_base_id), array_agg(n.lexical_terms), array_agg(n.lexical_length)
    INTO kb_ids, terms, lengths
    FROM lexical_new n JOIN lexical_old o ON o.id = n.id
    WHERE n.lexical_terms IS NOT NULL AND n.knowledge_base_id IS NOT NULL
      AND (o.lexical_terms IS DISTINCT FROM n.lexical_terms
           OR o.lexical_length IS DISTINCT FROM n.lexical_length
           OR o.knowledge_base_id IS DISTINCT FROM n.knowledge_base_id);
    IF kb_ids IS NOT NULL THEN
      PERFORM lexical_scope_stats_apply(kb_ids, terms, lengths, 1);
    END IF;
    SELECT array_agg(o.knowledge_base_id), array_agg(o.lexical_terms), array_agg(o.lexical_length)
    INTO kb_ids, terms, lengths
    FROM lexical_old o JOIN lexical_new n ON n.id = o.id
    WHERE o.lexical_terms IS NOT NULL AND o.knowledge_base_id IS NOT NULL
      AND (o.lexical_terms IS DISTINCT FROM n.lexical_terms
           OR o.lexical_length IS DISTINCT FROM n.lexical_length
           OR o.knowledge_base_id IS DISTINCT FROM n.knowledge_base_id);
    IF kb_ids IS NOT NULL THEN
      PERFORM lexical_scope_stats_apply(kb_ids, terms, lengths, -1);
    END IF;
  END IF;
  RETURN NULL;
END
$$;

-- Recounts every base's statistics from the chunks: run by this file when the tables are new
-- (an index written before they existed).
CREATE OR REPLACE FUNCTION lexical_scope_stats_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM lexical_scope_stats;
  DELETE FROM lexical_length_stats;
  DELETE FROM lexical_term_stats;
  INSERT INTO lexical_scope_stats (knowledge_base_id, chunk_count, term_count)
  SELECT knowledge_base_id, count(*), coalesce(sum(lexical_length), 0)
  FROM chunks WHERE lexical_terms IS NOT NULL AND knowledge_base_id IS NOT NULL
  GROUP BY 1;
  INSERT INTO lexical_length_stats (knowledge_base_id, length_cell, chunk_count)
  SELECT knowledge_base_id, lexical_length_cell(lexical_length), count(*)
  FROM chunks WHERE lexical_terms IS NOT NULL AND knowledge_base_id IS NOT NULL
  GROUP BY 1, 2;
  INSERT INTO lexical_term_stats (knowledge_base_id, term, df)
  SELECT c.knowledge_base_id, t.term, count(*)
  FROM chunks c CROSS JOIN LATERAL unnest(tsvector_to_array(c.lexical_terms)) AS t(term)
  WHERE c.lexical_terms IS NOT NULL AND c.knowledge_base_id IS NOT NULL
  GROUP BY 1, 2;
END
$$;

CREATE OR REPLACE TRIGGER chunks_lexical_scope_stats_insert AFTER INSERT ON chunks
  REFERENCING NEW TABLE AS lexical_new
  FOR EACH STATEMENT EXECUTE FUNCTION lexical_scope_stats_track();
CREATE OR REPLACE TRIGGER chunks_lexical_scope_stats_update AFTER UPDATE ON chunks
  REFERENCING OLD TABLE AS lexical_old NEW TABLE AS lexical_new
  FOR EACH STATEMENT EXECUTE FUNCTION lexical_scope_stats_track();
CREATE OR REPLACE TRIGGER chunks_lexical_scope_stats_delete AFTER DELETE ON chunks
  REFERENCING OLD TABLE AS lexical_old
  FOR EACH STATEMENT EXECUTE FUNCTION lexical_scope_stats_track();

CREATE OR REPLACE FUNCTION lexical_scope_stats_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM lexical_scope_stats;
  DELETE FROM lexical_length_stats;
  DELETE FROM lexical_term_stats;
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER chunks_lexical_scope_stats_truncate AFTER TRUNCATE ON chunks
  FOR EACH STATEMENT EXECUTE FUNCTION lexical_scope_stats_reset();

SELECT lexical_scope_stats_rebuild()
WHERE NOT EXISTS (SELECT FROM lexical_scope_stats)
  AND EXISTS (SELECT FROM chunks WHERE lexical_terms IS NOT NULL AND knowledge_base_id IS NOT NULL);

-- Vaults indexed before knowledge bases existed become sources of `default` (idempotent).
INSERT INTO knowledge_base_sources (knowledge_base_id, kind, path)
SELECT (SELECT id FROM knowledge_bases WHERE slug = 'default'), 'vault', v.vault_path
FROM (SELECT DISTINCT vault_path FROM documents WHERE knowledge_base_id IS NULL) v
ON CONFLICT (path) DO NOTHING;
UPDATE documents d SET knowledge_base_id = s.knowledge_base_id
FROM knowledge_base_sources s
WHERE d.knowledge_base_id IS NULL AND s.path = d.vault_path;
UPDATE chunks c SET knowledge_base_id = d.knowledge_base_id
FROM documents d
WHERE c.knowledge_base_id IS NULL AND d.id = c.document_id AND d.knowledge_base_id IS NOT NULL;

-- Rows written by a client that names only the first release's columns still get their base:
-- a document from its source (or `default`), a chunk from its document.
CREATE OR REPLACE FUNCTION documents_knowledge_base_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.knowledge_base_id IS NULL THEN
    SELECT s.knowledge_base_id INTO NEW.knowledge_base_id
    FROM knowledge_base_sources s WHERE s.path = NEW.vault_path;
    IF NEW.knowledge_base_id IS NULL THEN
      SELECT id INTO NEW.knowledge_base_id FROM knowledge_bases WHERE slug = 'default';
    END IF;
  END IF;
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER documents_knowledge_base_fill BEFORE INSERT ON documents
  FOR EACH ROW WHEN (NEW.knowledge_base_id IS NULL)
  EXECUTE FUNCTION documents_knowledge_base_fill();

CREATE OR REPLACE FUNCTION chunks_knowledge_base_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.knowledge_base_id IS NULL THEN
    SELECT knowledge_base_id INTO NEW.knowledge_base_id FROM documents WHERE id = NEW.document_id;
  END IF;
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER chunks_knowledge_base_fill BEFORE INSERT ON chunks
  FOR EACH ROW WHEN (NEW.knowledge_base_id IS NULL)
  EXECUTE FUNCTION chunks_knowledge_base_fill();

-- A document moved to another base takes its chunks along, in the same statement's transaction.
CREATE OR REPLACE FUNCTION documents_knowledge_base_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE chunks SET knowledge_base_id = NEW.knowledge_base_id WHERE document_id = NEW.id;
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER documents_knowledge_base_follow AFTER UPDATE OF knowledge_base_id ON documents
  FOR EACH ROW WHEN (OLD.knowledge_base_id IS DISTINCT FROM NEW.knowledge_base_id)
  EXECUTE FUNCTION documents_knowledge_base_follow();

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

-- Durable background jobs (knowledge/jobs/). A worker claims a job with one statement (FOR
-- UPDATE SKIP LOCKED) and holds it by a lease: lease_owner and a fresh lease_token per claim.
-- Heartbeats, completion and failure match both, so a worker whose lease expired and was
-- reclaimed by another cannot overwrite its successor's work.
CREATE TABLE IF NOT EXISTS background_jobs (
  id BIGSERIAL PRIMARY KEY,
  type TEXT NOT NULL,
  resource TEXT NOT NULL DEFAULT '',  -- what it works on, e.g. "document:42"
  payload JSONB NOT NULL DEFAULT '{}'::jsonb,
  status TEXT NOT NULL DEFAULT 'queued'
    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  stage TEXT NOT NULL DEFAULT '',
  progress REAL NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
  run_after TIMESTAMPTZ NOT NULL DEFAULT now(),
  lease_owner TEXT,
  lease_token UUID,
  lease_until TIMESTAMPTZ,
  last_error TEXT,
  result JSONB NOT NULL DEFAULT '{}'::jsonb,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at TIMESTAMPTZ,
  finished_at TIMESTAMPTZ
);
-- The claim reads queued jobs due now, oldest first, and running jobs whose lease expired.
CREATE INDEX IF NOT EXISTS idx_background_jobs_claim ON background_jobs (run_after, id)
  WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS idx_background_jobs_lease ON background_jobs (lease_until)
  WHERE status = 'running';
CREATE INDEX IF NOT EXISTS idx_background_jobs_resource ON background_jobs (resource, id);

-- The job workers that are alive (jobs/worker.py): each worker thread writes its row every few
-- seconds while it waits for work and removes it when it stops. /health/ready counts a worker
-- seen lately, or a running job whose lease is current (a worker busy with a long job writes
-- its lease, not this row).
-- Bad bearer tokens per client address and minute (access/throttling.py): once an address
-- passes RAG_TOKEN_FAILURE_LIMIT in a minute, its tokens are not even looked at until the minute
-- ends. One row per address, reset when a new minute begins; rows of past minutes are dropped.
CREATE TABLE IF NOT EXISTS token_failures (
    address TEXT PRIMARY KEY,
    window_start TIMESTAMPTZ NOT NULL,
    failures INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS job_workers (
    owner TEXT PRIMARY KEY,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    seen_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- A trace of every search and answer (knowledge/traces.py): who asked (a user or token id and
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
-- Where prompt_tokens and completion_tokens came from: 'provider' (the LLM server's `usage`)
-- or 'counted' (local-rag's own count, when the server sent no usage); NULL without an LLM
-- call, and on traces recorded before this column existed.
ALTER TABLE traces ADD COLUMN IF NOT EXISTS token_source TEXT;

-- Recall of an HNSW index on the deployment's own vectors (index/vector_recall.py): recall@10
-- against the exact scan at each ef_search tried, in the order tried, on a sample of stored
-- vectors used as queries. Keyed by the index's name and tied to its oid: a rebuilt index is a
-- new relation, so a measurement never outlives the graph it measured. Retrieval reads it on
-- every search (a primary-key lookup) to pick the path and the ef_search.
CREATE TABLE IF NOT EXISTS vector_index_tuning (
  index_name TEXT PRIMARY KEY,
  index_oid OID NOT NULL,
  embedding_provider TEXT NOT NULL,
  embedding_model TEXT NOT NULL,
  m INTEGER,
  ef_construction INTEGER,
  ef_searches INTEGER[] NOT NULL,
  recalls DOUBLE PRECISION[] NOT NULL,
  target_recall DOUBLE PRECISION NOT NULL,  -- RAG_HNSW_TARGET_RECALL the ladder climbed to
  sample_size INTEGER NOT NULL,  -- queries measured
  vectors BIGINT NOT NULL,  -- the provider/model's vectors when measured
  seconds DOUBLE PRECISION NOT NULL,
  measured_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  CHECK (cardinality(ef_searches) = cardinality(recalls) AND cardinality(recalls) > 0)
);

-- Metadata filters of a search (retrieval/filters.py): resolved on documents to the admitted
-- document ids before the channels run, so each index here keeps that step a few milliseconds
-- at 100k chunks.
--   tags  the document's tags, lowercased (the chunks keep them as written); NULL only for a
--         document stored before this column, filled below from its first chunk
ALTER TABLE documents ADD COLUMN IF NOT EXISTS tags TEXT[];
UPDATE documents d
SET tags = coalesce((SELECT array_agg(DISTINCT lower(t)) FROM chunks c, unnest(c.tags) AS t
                     WHERE c.id = (SELECT min(f.id) FROM chunks f WHERE f.document_id = d.id)),
                    ARRAY[]::text[])
WHERE d.tags IS NULL;
CREATE INDEX IF NOT EXISTS idx_documents_tags ON documents USING gin (tags);
-- Equality and one-of on frontmatter fields (`frontmatter @? '$."year" ? (@ == 2021)'`).
CREATE INDEX IF NOT EXISTS idx_documents_frontmatter ON documents
  USING gin (frontmatter jsonb_path_ops);
-- Folder prefixes (`relative_path LIKE 'reports/2021/%'`).
CREATE INDEX IF NOT EXISTS idx_documents_path_prefix ON documents
  (knowledge_base_id, relative_path text_pattern_ops);
-- Title substrings, ignoring case (the name a document is cited by when it has no title).
DROP INDEX IF EXISTS idx_documents_title_trgm;
CREATE INDEX IF NOT EXISTS idx_documents_title_trgm_v2 ON documents
  USING gin (lower(coalesce(title, frontmatter ->> 'title', source_name, relative_path))
             gin_trgm_ops);

-- Each `rag restore` into this database (ops/restore.py): written in the restore's own
-- transaction, so a row here says that the restore committed; finished_at once its uploads are
-- in place and its schema is up to date.
CREATE TABLE IF NOT EXISTS restore_runs (
    id TEXT PRIMARY KEY,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at TIMESTAMPTZ
);
