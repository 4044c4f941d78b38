"""Raw SQL of retrieval: the exact cosine scan. Every value is bound as a parameter."""

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

HAS_EMBEDDINGS = """
SELECT EXISTS (SELECT 1 FROM embeddings
               WHERE embedding_provider = %s AND embedding_model = %s AND embedding_dim = %s)
"""
