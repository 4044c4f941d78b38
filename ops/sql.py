"""Raw SQL of `rag db init` and `rag backup` (restore's is ops/restore_sql.py). Every value is
bound."""

# The character type decides what pg_trgm and case-insensitive matching see as letters.
DATABASE_CTYPE = """
SELECT datctype, pg_encoding_to_char(encoding) FROM pg_catalog.pg_database
WHERE datname = current_database()
"""

# Backup and restore (ops/backup.py, ops/restore.py). The tables and catalogue
# objects of the application's schema, without those an extension owns.
BACKUP_TABLES = """
SELECT c.relname FROM pg_catalog.pg_class c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
ORDER BY c.relname
"""

# Restoring checks the same three numbers (RESTORE_FINISH), so a restore cut short in its last
# section (indexes, constraints, triggers) cannot pass for a complete one.
BACKUP_OBJECT_COUNTS = """
SELECT
  (SELECT count(*) FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
    WHERE c.relnamespace = current_schema()::regnamespace),
  (SELECT count(*) FROM pg_catalog.pg_constraint
    WHERE connamespace = current_schema()::regnamespace),
  (SELECT count(*) FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
    WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal)
"""

BACKUP_SERVER = """
SELECT current_setting('server_version'),
       (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'vector'),
       current_database()
"""

BACKUP_MIGRATIONS = "SELECT app, name FROM django_migrations ORDER BY app, id"

BACKUP_EMBEDDERS = """
SELECT embedding_provider, embedding_model, embedding_dim, count(*) FROM embeddings
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
"""

BACKUP_UPLOAD_SOURCES = """
SELECT id, knowledge_base_id, path FROM knowledge_base_sources WHERE kind = 'uploads' ORDER BY id
"""

BACKUP_VAULT_SOURCES = """
SELECT path FROM knowledge_base_sources WHERE kind = 'vault' ORDER BY path
"""

BACKUP_UPLOAD_FILES = """
SELECT s.id, d.relative_path, d.status
FROM knowledge_base_sources s JOIN documents d ON d.vault_path = s.path
WHERE s.kind = 'uploads'
ORDER BY s.id, d.relative_path
"""
