"""Raw SQL of `rag restore` (ops/restore.py); the catalogue check is in
ops/restore_catalogue.py."""

# How many tables of any kind the target of a restore already holds (it must hold none).
RESTORE_TABLES_PRESENT = """
SELECT count(*), min(c.relname) FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'
"""

RESTORE_VECTOR_PRESENT = """
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'vector')
"""
# As knowledge's migration 0005 does: a role that may create extensions (a superuser) creates
# pgvector.
RESTORE_VECTOR_CREATE = "CREATE EXTENSION IF NOT EXISTS vector"

# The first statement of a restore's transaction: one restore at a time into a database (the
# lock is held until the transaction ends).
RESTORE_START = "SELECT pg_advisory_xact_lock(hashtext('local-rag restore'));\n"

# The last of a restore's transaction, after ops/restore_catalogue.py's check: the mark
# that says it committed. ops/restore.py reads it to finish a restore that was killed
# between its commit and its uploads' move.
RESTORE_RUN_MARK = """
INSERT INTO restore_runs (id) VALUES (:'restore_id');
"""
RESTORE_RUNS_PRESENT = "SELECT to_regclass('restore_runs') IS NOT NULL"
RESTORE_RUN_PENDING = """
SELECT EXISTS (SELECT 1 FROM restore_runs WHERE id = %s AND finished_at IS NULL)
"""
RESTORE_RUN_FINISHED = "UPDATE restore_runs SET finished_at = now() WHERE id = %s"
# Trusted: the database's owner may create it.
RESTORE_TRGM = "CREATE EXTENSION IF NOT EXISTS pg_trgm"

# The end of a restore, run by psql in the same transaction as the restored dump (so any error
# here undoes the whole restore): the upload areas move to this installation's folder
# (:'restore_map', [{old, new}]), then every table's row count and the catalogue's object
# counts must equal the archive's (:'restore_counts', :'restore_objects'). pg_restore's script
# empties search_path; the DO block reads its inputs from transaction-local settings because
# psql does not interpolate inside dollar quotes.
RESTORE_FINISH = """
SET search_path = public;
SELECT set_config('localrag.restore_map', :'restore_map', true),
       set_config('localrag.restore_counts', :'restore_counts', true),
       set_config('localrag.restore_objects', :'restore_objects', true);
DO $$
DECLARE
  area jsonb;
  old_root text;
  new_root text;
  counts jsonb := current_setting('localrag.restore_counts')::jsonb;
  objects jsonb := current_setting('localrag.restore_objects')::jsonb;
  tbl text;
  found bigint;
  found_objects bigint[];
BEGIN
  FOR area IN SELECT * FROM jsonb_array_elements(current_setting('localrag.restore_map')::jsonb)
  LOOP
    old_root := area->>'old';
    new_root := area->>'new';
    CONTINUE WHEN old_root = new_root;
    UPDATE knowledge_base_sources SET path = new_root WHERE path = old_root;
    UPDATE chunks c SET file_path = new_root || substr(c.file_path, length(old_root) + 1)
    FROM documents d
    WHERE c.document_id = d.id AND d.vault_path = old_root
      AND starts_with(c.file_path, old_root || '/');
    UPDATE documents SET vault_path = new_root,
      file_path = CASE WHEN starts_with(file_path, old_root || '/')
                       THEN new_root || substr(file_path, length(old_root) + 1)
                       ELSE file_path END
    WHERE vault_path = old_root;
  END LOOP;
  FOR tbl IN SELECT jsonb_object_keys(counts) LOOP
    EXECUTE format('SELECT count(*) FROM %I', tbl) INTO found;
    IF found <> (counts->>tbl)::bigint THEN
      RAISE EXCEPTION 'restore check: table % holds % rows, the archive % rows', tbl, found,
        counts->>tbl;
    END IF;
  END LOOP;
  SELECT ARRAY[
    (SELECT count(*) FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
      WHERE c.relnamespace = 'public'::regnamespace),
    (SELECT count(*) FROM pg_catalog.pg_constraint WHERE connamespace = 'public'::regnamespace),
    (SELECT count(*) FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
      WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal)] INTO found_objects;
  IF found_objects <> ARRAY[(objects->>'indexes')::bigint, (objects->>'constraints')::bigint,
                            (objects->>'triggers')::bigint] THEN
    RAISE EXCEPTION 'restore check: the schema holds % indexes, constraints and triggers, the '
      'archive %', found_objects, objects;
  END IF;
END
$$;
"""
