"""Raw SQL of the knowledge app, as named constants. Every value is bound as a parameter."""

SCHEMA_STATE = """
SELECT
  (SELECT count(*) FROM pg_catalog.pg_tables
    WHERE schemaname = current_schema() AND tablename = ANY(%s)),
  EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'vector')
"""

INDEX_COUNTS = """
SELECT
  (SELECT count(*) FROM documents),
  (SELECT count(*) FROM chunks),
  (SELECT count(*) FROM embeddings
    WHERE embedding_provider = %s AND embedding_model = %s AND embedding_dim = %s)
"""
