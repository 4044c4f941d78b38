-- The search index's change log (index/): which chunks changed in which generation of their
-- knowledge base.
--
-- Every write to chunks (their terms, their base) or to embeddings bumps the generation of each
-- base it touched and logs the chunk ids it touched with that generation, in the writer's own
-- transaction: the UPDATE of the base's row takes its lock, so the generations commit in the
-- order they were given. An index that reflects generation G is brought up to date by the
-- chunks logged after G; a search scores them exactly in SQL until it is (index/delta.py).
-- Statement-level triggers over the transition tables: one bump and one INSERT per statement,
-- however many rows it wrote.

CREATE TABLE IF NOT EXISTS search_index_state (
  knowledge_base_id BIGINT PRIMARY KEY,
  generation BIGINT NOT NULL DEFAULT 0,
  -- Every change of a generation >= log_start is still in search_index_changes; an index
  -- older than log_start - 1 cannot be brought up to date from the log and is rebuilt.
  log_start BIGINT NOT NULL DEFAULT 1,
  changed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS search_index_changes (
  knowledge_base_id BIGINT NOT NULL,
  generation BIGINT NOT NULL,
  chunk_id BIGINT NOT NULL,
  logged_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_search_index_changes_generation
  ON search_index_changes (knowledge_base_id, generation);

-- One function for both tables and every operation: which rows changed, as (kb, chunk_id), is
-- the only difference, so the query is put together here and run by EXECUTE (the transition
-- tables are visible to it). Chunks: the inserted or deleted rows; of an update, only rows
-- whose terms or base changed (their old base loses them, their new base gains them). A vector
-- changes its chunk for the vector index; a vector removed with its chunk (ON DELETE CASCADE)
-- finds no chunk any more: the chunk's own delete logged it.
CREATE OR REPLACE FUNCTION search_index_log() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed TEXT;
BEGIN
  IF TG_TABLE_NAME = 'chunks' AND TG_OP = 'UPDATE' THEN
    changed := $q$
      SELECT o.knowledge_base_id AS kb, o.id AS chunk_id
      FROM search_index_new n JOIN search_index_old o ON o.id = n.id
      WHERE o.knowledge_base_id IS NOT NULL
        AND (o.lexical_terms IS DISTINCT FROM n.lexical_terms
             OR o.knowledge_base_id IS DISTINCT FROM n.knowledge_base_id)
      UNION
      SELECT n.knowledge_base_id, n.id
      FROM search_index_new n JOIN search_index_old o ON o.id = n.id
      WHERE n.knowledge_base_id IS NOT NULL
        AND (o.lexical_terms IS DISTINCT FROM n.lexical_terms
             OR o.knowledge_base_id IS DISTINCT FROM n.knowledge_base_id)$q$;
  ELSIF TG_TABLE_NAME = 'chunks' THEN
    changed := format($q$
      SELECT r.knowledge_base_id AS kb, r.id AS chunk_id FROM %I r
      WHERE r.knowledge_base_id IS NOT NULL$q$,
      CASE TG_OP WHEN 'INSERT' THEN 'search_index_new' ELSE 'search_index_old' END);
  ELSE
    changed := format($q$
      SELECT DISTINCT c.knowledge_base_id AS kb, c.id AS chunk_id
      FROM %I r JOIN chunks c ON c.id = r.chunk_id
      WHERE c.knowledge_base_id IS NOT NULL$q$,
      CASE TG_OP WHEN 'DELETE' THEN 'search_index_old' ELSE 'search_index_new' END);
  END IF;
  EXECUTE format($q$
    WITH changed AS MATERIALIZED (%s), bumped AS (
      INSERT INTO search_index_state AS s (knowledge_base_id, generation)
      SELECT DISTINCT kb, 1 FROM changed ORDER BY 1
      ON CONFLICT (knowledge_base_id) DO UPDATE
        SET generation = s.generation + 1, changed_at = now()
      RETURNING s.knowledge_base_id, s.generation
    )
    INSERT INTO search_index_changes (knowledge_base_id, generation, chunk_id)
    SELECT c.kb, b.generation, c.chunk_id FROM changed c
    JOIN bumped b ON b.knowledge_base_id = c.kb$q$, changed);
  RETURN NULL;
END
$$;

-- TRUNCATE logs no rows: every base's log then starts after its current generation, so every
-- index built before is rebuilt rather than brought up to date.
CREATE OR REPLACE FUNCTION search_index_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM search_index_changes;
  UPDATE search_index_state SET generation = generation + 1, log_start = generation + 2,
                                changed_at = now();
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER chunks_search_index_insert AFTER INSERT ON chunks
  REFERENCING NEW TABLE AS search_index_new
  FOR EACH STATEMENT EXECUTE FUNCTION search_index_log();
CREATE OR REPLACE TRIGGER chunks_search_index_update AFTER UPDATE ON chunks
  REFERENCING OLD TABLE AS search_index_old NEW TABLE AS search_index_new
  FOR EACH STATEMENT EXECUTE FUNCTION search_index_log();
CREATE OR REPLACE TRIGGER chunks_search_index_delete AFTER DELETE ON chunks
  REFERENCING OLD TABLE AS search_index_old
  FOR EACH STATEMENT EXECUTE FUNCTION search_index_log();
CREATE OR REPLACE TRIGGER chunks_search_index_truncate AFTER TRUNCATE ON chunks
  FOR EACH STATEMENT EXECUTE FUNCTION search_index_reset();
CREATE OR REPLACE TRIGGER embeddings_search_index_insert AFTER INSERT ON embeddings
  REFERENCING NEW TABLE AS search_index_new
  FOR EACH STATEMENT EXECUTE FUNCTION search_index_log();
CREATE OR REPLACE TRIGGER embeddings_search_index_update AFTER UPDATE ON embeddings
  REFERENCING OLD TABLE AS search_index_old NEW TABLE AS search_index_new
  FOR EACH STATEMENT EXECUTE FUNCTION search_index_log();
CREATE OR REPLACE TRIGGER embeddings_search_index_delete AFTER DELETE ON embeddings
  REFERENCING OLD TABLE AS search_index_old
  FOR EACH STATEMENT EXECUTE FUNCTION search_index_log();
CREATE OR REPLACE TRIGGER embeddings_search_index_truncate AFTER TRUNCATE ON embeddings
  FOR EACH STATEMENT EXECUTE FUNCTION search_index_reset();
