"""Raw SQL of `rag db init` (restore's is ops/restore_sql.py). Every value is bound."""

# The character type decides what pg_trgm and case-insensitive matching see as letters.
DATABASE_CTYPE = """
SELECT datctype, pg_encoding_to_char(encoding) FROM pg_catalog.pg_database
WHERE datname = current_database()
"""
