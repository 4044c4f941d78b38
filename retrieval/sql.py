"""Raw SQL of retrieval: the exact cosine scan. Every value is bound as a parameter."""

# Exact scan over the current provider/model/dim only; no approximate index is relied on.
# Ties are broken by path and chunk index so equal scores always come back in the same order.
SEARCH = """
SELECT c.content, c.relative_path, c.heading_path, c.chunk_index, c.document_id, c.content_hash,
       e.embedding <=> %b AS distance
FROM embeddings e
JOIN chunks c ON c.id = e.chunk_id
WHERE e.embedding_provider = %s AND e.embedding_model = %s AND e.embedding_dim = %s
ORDER BY distance, c.relative_path, c.chunk_index
LIMIT %s
"""

HAS_EMBEDDINGS = """
SELECT EXISTS (SELECT 1 FROM embeddings
               WHERE embedding_provider = %s AND embedding_model = %s AND embedding_dim = %s)
"""
