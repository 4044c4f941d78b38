-- The triggers on chunks that keep the lexical channel's derived data current, in the
-- transaction of whatever writes the chunks (knowledge/store.py, a restore, psql), so that it
-- never drifts from them:
-- * lexical_stats: the whole index's chunk and term counts (one row);
-- * lexical_scope_stats, lexical_length_stats, lexical_term_stats: BM25's statistics per
--   knowledge base (chunks and terms, chunks per length class, document frequency per term);
-- * chunks.lexical_cells, the impact cells of a chunk's terms, for a writer that gives none.
-- Every INSERT, UPDATE, DELETE and TRUNCATE of chunks fires them, also the deletes cascaded
-- from documents. A change of a function here is a new migration that replaces it (CREATE OR
-- REPLACE), never an edit of this file.

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

-- Recounts every base's statistics from the chunks: run at the end of this file when the tables
-- are new (an index written before they existed).
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
