"""The first release's exact cosine scan, kept as the reference that `vector` mode must still
match row for row (retrieval/sql.py SEARCH_EXACT is it plus the chunk id)."""

# Exact scan over the current provider/model/dim only; no approximate index is relied on. The
# distances are computed on the embeddings table alone and only the top rows are joined to their
# chunks. Ties are broken by chunk id, so equal scores always come back in the same order.
SEARCH = """
WITH nearest AS (
  SELECT e.chunk_id, e.embedding <=> %b AS distance
  FROM embeddings e
  WHERE e.embedding_provider = %s AND e.embedding_model = %s AND e.embedding_dim = %s
  ORDER BY distance, e.chunk_id
  LIMIT %s
)
SELECT c.content, c.relative_path, c.heading_path, c.chunk_index, c.document_id, c.content_hash,
       n.distance
FROM nearest n
JOIN chunks c ON c.id = n.chunk_id
ORDER BY n.distance, n.chunk_id
"""
