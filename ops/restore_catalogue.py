"""What a restored database may hold: the objects local-rag itself creates, and nothing else.

An archive is a pg_dump that anyone could have written. Checksums only prove that it was not
changed after the manifest was written, so a self-consistent archive can carry a schema, a
function or a trigger of its own: a trigger on knowledge_bases that grants a stranger every new
base, say. Archives are not signed. A backup is usually restored on a new machine, which holds
no key of the old one, so a signature would be checked against a key that came with the archive.
What the restore trusts is the catalogue after the load instead, checked inside the restore's
own transaction:

1. The dump is loaded. The row and object counts are compared with the manifest
   (ops/restore_sql.py RESTORE_FINISH).
2. The product's own schema files run: the SQL files of every app's migrations, floor first
   (core/schema.py). Each of their functions and triggers is written with CREATE OR REPLACE,
   so an archived function or trigger of the same name now has the product's body, whatever
   the archive said.
3. CATALOGUE_CHECK refuses any object these files, Django's models and the three extensions
   (plpgsql, vector, pg_trgm) do not account for. That covers schemas, tables, views and
   sequences; functions (a second function of a product name too, an overload that step 2 could
   not replace); triggers, event triggers and rules; policies; types, operators, casts, text
   search objects and collations; foreign servers; publications; large objects.

A refusal rolls the whole restore back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from core.schema import schema_sql_files
from knowledge.db_schema import RAG_TABLES

EXTENSIONS = ("plpgsql", "vector", "pg_trgm")
_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)", re.IGNORECASE)
_FUNCTION = re.compile(r"CREATE OR REPLACE FUNCTION (\w+)\s*\(", re.IGNORECASE)
_TRIGGER = re.compile(r"CREATE OR REPLACE TRIGGER (\w+)\b.*?\bON (\w+)", re.IGNORECASE | re.DOTALL)


def restore_schema_files() -> list[Path]:
    """The SQL files a restore runs inside its transaction, in order."""
    return schema_sql_files()


def catalogue_allowed() -> dict[str, list]:
    """The names the product creates: {tables, functions, triggers: [[name, table]],
    extensions}, as CATALOGUE_CHECK reads them."""
    texts = [path.read_text(encoding="utf-8") for path in restore_schema_files()]
    tables = set(RAG_TABLES) | set(connection.introspection.django_table_names(
        only_existing=False, include_views=True)) | {MigrationRecorder.Migration._meta.db_table}
    return {
        "tables": sorted(tables | set(_found(_TABLE, texts))),
        "functions": sorted(set(_found(_FUNCTION, texts))),
        "triggers": sorted({(match.group(1), match.group(2)) for text in texts
                            for match in _TRIGGER.finditer(text)}),
        "extensions": list(EXTENSIONS),
    }


def catalogue_allowed_json() -> str:
    return json.dumps(catalogue_allowed())


def _found(pattern: re.Pattern[str], texts: Iterable[str]) -> list[str]:
    return [match.group(1) for text in texts for match in pattern.finditer(text)]


# Every object of the database that is not a system object (oid below 16384, or pg_catalog's
# and information_schema's), is not a member of an extension, and is not in
# :'restore_allowed'. Run by psql at the end of the restore's transaction; the DO block reads
# its input from a transaction-local setting, as RESTORE_FINISH does. A sequence is the
# product's when it belongs to a column of a product table (serial, identity).
CATALOGUE_CHECK = """
SET search_path = public;
SELECT set_config('localrag.restore_allowed', :'restore_allowed', true);
DO $$
DECLARE
  allowed jsonb := current_setting('localrag.restore_allowed')::jsonb;
  tables text[] := ARRAY(SELECT jsonb_array_elements_text(allowed->'tables'));
  functions text[] := ARRAY(SELECT jsonb_array_elements_text(allowed->'functions'));
  triggers text[] := ARRAY(SELECT t->>0 || ' ON ' || (t->>1)
                           FROM jsonb_array_elements(allowed->'triggers') t);
  extensions text[] := ARRAY(SELECT jsonb_array_elements_text(allowed->'extensions'));
  foreign_objects text[];
BEGIN
  CREATE TEMP TABLE restore_members ON COMMIT DROP AS
    SELECT classid, objid FROM pg_catalog.pg_depend WHERE deptype = 'e';
  SELECT array_agg(what ORDER BY what) INTO foreign_objects FROM (
    SELECT 'schema ' || n.nspname AS what FROM pg_catalog.pg_namespace n
    WHERE n.nspname NOT IN ('public', 'pg_catalog', 'information_schema', 'pg_toast')
      AND n.nspname NOT LIKE 'pg\\_temp\\_%' AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%'
      AND NOT EXISTS (SELECT 1 FROM restore_members m
                      WHERE m.classid = 'pg_namespace'::regclass AND m.objid = n.oid)
    UNION ALL
    SELECT CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view '
                          WHEN 'f' THEN 'foreign table ' WHEN 'S' THEN 'sequence '
                          ELSE 'table ' END || c.oid::regclass::text
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
      AND NOT EXISTS (SELECT 1 FROM restore_members m
                      WHERE m.classid = 'pg_class'::regclass AND m.objid = c.oid)
      AND NOT (c.relkind IN ('r', 'p', 'v') AND c.relname = ANY(tables))
      AND NOT (c.relkind = 'S' AND EXISTS (
        SELECT 1 FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')
          AND d.refclassid = 'pg_class'::regclass AND t.relname = ANY(tables)
          AND t.relnamespace = c.relnamespace))
    UNION ALL
    SELECT 'function ' || p.oid::regprocedure::text
    FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND NOT EXISTS (SELECT 1 FROM restore_members m
                      WHERE m.classid = 'pg_proc'::regclass AND m.objid = p.oid)
      AND NOT (n.nspname = 'public' AND p.proname = ANY(functions)
               AND (SELECT count(*) FROM pg_catalog.pg_proc o
                    WHERE o.pronamespace = p.pronamespace AND o.proname = p.proname) = 1)
    UNION ALL
    SELECT 'trigger ' || t.tgname || ' ON ' || t.tgrelid::regclass::text
    FROM pg_catalog.pg_trigger t
    WHERE NOT t.tgisinternal AND t.tgrelid >= 16384
      AND NOT (t.tgname || ' ON ' || t.tgrelid::regclass::text = ANY(triggers))
    UNION ALL
    SELECT 'event trigger ' || evtname FROM pg_catalog.pg_event_trigger
    UNION ALL
    SELECT 'rule ' || r.rulename || ' ON ' || r.ev_class::regclass::text
    FROM pg_catalog.pg_rewrite r
    WHERE r.rulename <> '_RETURN' AND r.ev_class >= 16384
    UNION ALL
    SELECT 'policy ' || p.polname || ' ON ' || p.polrelid::regclass::text
    FROM pg_catalog.pg_policy p
    UNION ALL
    SELECT 'extension ' || e.extname FROM pg_catalog.pg_extension e
    WHERE NOT e.extname = ANY(extensions)
    UNION ALL
    SELECT 'type ' || t.oid::regtype::text
    FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
    WHERE n.nspname = 'public' AND t.typtype IN ('b', 'd', 'e', 'r', 'm') AND t.typelem = 0
      AND NOT EXISTS (SELECT 1 FROM restore_members m
                      WHERE m.classid = 'pg_type'::regclass AND m.objid = t.oid)
    UNION ALL
    SELECT 'type ' || t.oid::regtype::text
    FROM pg_catalog.pg_type t JOIN pg_catalog.pg_class c ON c.oid = t.typrelid
    WHERE t.typtype = 'c' AND c.relkind = 'c' AND t.oid >= 16384
      AND NOT EXISTS (SELECT 1 FROM restore_members m
                      WHERE m.classid = 'pg_type'::regclass AND m.objid = t.oid)
    UNION ALL
    SELECT 'operator ' || o.oid::regoperator::text FROM pg_catalog.pg_operator o
    WHERE o.oid >= 16384 AND NOT EXISTS (
      SELECT 1 FROM restore_members m WHERE m.classid = 'pg_operator'::regclass
                                        AND m.objid = o.oid)
    UNION ALL
    SELECT 'cast ' || format_type(c.castsource, NULL) || ' AS ' || format_type(c.casttarget, NULL)
    FROM pg_catalog.pg_cast c
    WHERE c.oid >= 16384 AND NOT EXISTS (
      SELECT 1 FROM restore_members m WHERE m.classid = 'pg_cast'::regclass AND m.objid = c.oid)
    UNION ALL
    SELECT 'operator class ' || o.opcname FROM pg_catalog.pg_opclass o
    WHERE o.oid >= 16384 AND NOT EXISTS (
      SELECT 1 FROM restore_members m WHERE m.classid = 'pg_opclass'::regclass
                                        AND m.objid = o.oid)
    UNION ALL
    SELECT 'text search configuration ' || c.cfgname FROM pg_catalog.pg_ts_config c
    WHERE c.oid >= 16384
    UNION ALL
    SELECT 'text search dictionary ' || d.dictname FROM pg_catalog.pg_ts_dict d
    WHERE d.oid >= 16384
    UNION ALL
    SELECT 'collation ' || c.collname FROM pg_catalog.pg_collation c
    WHERE c.oid >= 16384
    UNION ALL
    SELECT 'foreign server ' || s.srvname FROM pg_catalog.pg_foreign_server s
    UNION ALL
    SELECT 'foreign data wrapper ' || w.fdwname FROM pg_catalog.pg_foreign_data_wrapper w
    WHERE NOT EXISTS (SELECT 1 FROM restore_members m
                      WHERE m.classid = 'pg_foreign_data_wrapper'::regclass
                        AND m.objid = w.oid)
    UNION ALL
    SELECT 'publication ' || p.pubname FROM pg_catalog.pg_publication p
    UNION ALL
    SELECT 'large object ' || l.oid FROM pg_catalog.pg_largeobject_metadata l
  ) found;
  IF foreign_objects IS NOT NULL THEN
    RAISE EXCEPTION 'restore check: the archive''s schema holds % objects local-rag does not '
      'create: %', cardinality(foreign_objects), array_to_string(foreign_objects[1:20], ', ');
  END IF;
END
$$;
"""
