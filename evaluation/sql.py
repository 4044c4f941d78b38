"""The SQL of evaluation's own reads of the corpus (evaluation/corpus.py). It reads the knowledge
app's documents and chunks, as retrieval's SQL does, and writes nothing there."""

# What an evaluation run saw (evaluation/corpus.py): every active document of the bases, in id
# order, with its active version and the content hashes of its chunks in order. Hashed here, so
# only the digest leaves the database.
CORPUS_DIGEST = """
SELECT encode(sha256(convert_to(coalesce(string_agg(
         d.id || E'\\t' || d.relative_path || E'\\t' || coalesce(d.active_version_id::text, '')
         || E'\\t' || d.content_hash || E'\\t' || coalesce(c.hashes, ''),
         E'\\n' ORDER BY d.id), ''), 'UTF8')), 'hex'),
       count(*)
FROM documents d
LEFT JOIN LATERAL (SELECT string_agg(content_hash, ',' ORDER BY chunk_index) AS hashes
                   FROM chunks WHERE document_id = d.id) c ON true
WHERE d.knowledge_base_id = ANY(%s) AND d.status = 'active'
"""

# The chunks of the bases in id order, a batch after a given id (evaluation/corpus.py reads them
# all once, whatever the number of texts it looks for).
CHUNKS_AFTER = """
SELECT c.id, c.relative_path, c.chunk_index, c.content
FROM chunks c JOIN documents d ON d.id = c.document_id
WHERE c.knowledge_base_id = ANY(%s) AND d.status = 'active' AND c.id > %s
ORDER BY c.id
LIMIT %s
"""
