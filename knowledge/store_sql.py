"""Raw SQL of ingest's writes (knowledge/store.py): documents, versions, chunks and their vectors,
ingest runs, the vault lock and the lexical index's build. The lexical-statistics triggers of
migration 0012 keep the statistics current under every chunk written here. Every value is
bound as a parameter (the rest of the app's SQL is knowledge/sql.py)."""

# Per existing document of a vault: its hash, how many chunks it has, and how many of those
# have a vector for the current provider/model/dim.
DOCUMENT_STATES = """
SELECT d.id, d.relative_path, d.content_hash,
       count(c.id) AS chunks,
       count(e.chunk_id) AS embedded,  -- the unique index holds it: no vector is read
       d.metadata ->> 'ocr_skipped_reason' AS ocr_skipped,
       d.status, d.mtime_ns, d.size_bytes, d.metadata ->> 'sidecar' AS sidecar, d.source_name
FROM documents d
LEFT JOIN chunks c ON c.document_id = d.id
LEFT JOIN embeddings e ON e.chunk_id = c.id
  AND e.embedding_provider = %s AND e.embedding_model = %s AND e.embedding_dim = %s
WHERE d.vault_path = %s
GROUP BY d.id
"""

# Per-document transactions stay atomic; only the wait for the WAL flush is skipped. After an OS
# crash the last few documents may be missing or old, never half-written, and the next ingest
# re-syncs them by hash.
ASYNC_COMMIT = "SET LOCAL synchronous_commit = off"

# A batch of whole documents is written in one transaction: per-document values arrive as
# parallel arrays (list-valued fields as jsonb, since unnest would flatten nested arrays).
UPSERT_DOCUMENTS = """
INSERT INTO documents (vault_path, knowledge_base_id, relative_path, file_path, content_hash,
                       mtime_ns, size_bytes, frontmatter, format, title, page_count,
                       ocr_page_count, metadata, tags)
SELECT %s, %s::int8, d.relative_path, d.file_path, d.content_hash, d.mtime_ns, d.size_bytes,
       d.frontmatter, d.format, d.title, d.page_count, d.ocr_page_count, d.metadata,
       ARRAY(SELECT lower(t) FROM jsonb_array_elements_text(d.tags) AS t)
FROM unnest(%s::text[], %s::text[], %s::text[], %s::int8[], %s::int8[], %s::jsonb[], %s::text[],
            %s::text[], %s::int4[], %s::int4[], %s::jsonb[], %s::jsonb[])
     AS d(relative_path, file_path, content_hash, mtime_ns, size_bytes, frontmatter, format,
          title, page_count, ocr_page_count, metadata, tags)
ON CONFLICT (vault_path, relative_path) DO UPDATE SET
  file_path = EXCLUDED.file_path, content_hash = EXCLUDED.content_hash,
  mtime_ns = EXCLUDED.mtime_ns, size_bytes = EXCLUDED.size_bytes,
  frontmatter = EXCLUDED.frontmatter, format = EXCLUDED.format, title = EXCLUDED.title,
  page_count = EXCLUDED.page_count, ocr_page_count = EXCLUDED.ocr_page_count,
  metadata = EXCLUDED.metadata, tags = EXCLUDED.tags, status = 'active',
  knowledge_base_id = coalesce(EXCLUDED.knowledge_base_id, documents.knowledge_base_id),
  updated_at = now()
"""

# Every existing row of the batch is locked, so a delete still in flight is waited for and its
# `deleting` seen (the status is read after the lock is granted).
DOCUMENTS_LOCK = """
SELECT relative_path, status FROM documents
WHERE vault_path = %s AND relative_path = ANY(%s)
ORDER BY id
FOR UPDATE
"""

# Old chunks go first (their embeddings cascade), so new chunk indexes never collide.
DELETE_DOCUMENTS_CHUNKS = """
DELETE FROM chunks
WHERE document_id IN (SELECT id FROM documents WHERE vault_path = %s AND relative_path = ANY(%s))
"""

# A batch's chunks in one statement. They arrive as one JSON array (one json.dumps in the client
# instead of adapting every field of every row), each naming its document by the document's
# relative path; the statement returns each new chunk's id under that path and its index, which
# is how the client pairs the chunks with their vectors for COPY_EMBEDDINGS (the same
# transaction). A chunk's own relative_path is its document's source: an upload's source name
# (knowledge/upload_names.py), else its path. lexical_terms arrives as a ready tsvector literal
# (parsing/lexical.py): cast, never parsed by a text-search configuration. (Inserting the
# vectors in the same statement joined them to the new chunks on the planner's estimate of one
# row a side: a nested loop of 250 × 250 pairs per batch, a quarter of the statement.) The
# statement also updates the lexical statistics, through the triggers on chunks that
# knowledge/store.py describes.
INSERT_CHUNKS = """
WITH inserted AS (
  INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path, heading_path,
                      frontmatter, tags, wikilinks, metadata, content_hash, token_count,
                      lexical_terms, lexical_length, lexical_version, lexical_cells, page_start,
                      page_end, knowledge_base_id)
  SELECT d.id, c.chunk_index, c.content, d.file_path, coalesce(d.source_name, d.relative_path),
         ARRAY(SELECT jsonb_array_elements_text(c.heading_path)), d.frontmatter,
         ARRAY(SELECT jsonb_array_elements_text(c.tags)),
         ARRAY(SELECT jsonb_array_elements_text(c.wikilinks)), c.metadata, c.content_hash,
         c.token_count, c.lexical_terms::tsvector, c.lexical_length, c.lexical_version,
         c.lexical_cells::tsvector, c.page_start, c.page_end, d.knowledge_base_id
  FROM jsonb_to_recordset(%s::jsonb)
         AS c(relative_path text, chunk_index int, content text, heading_path jsonb, tags jsonb,
              wikilinks jsonb, metadata jsonb, content_hash text, token_count int,
              lexical_terms text, lexical_length int, lexical_version int2,
              lexical_cells text, page_start int, page_end int)
  JOIN documents d ON d.vault_path = %s AND d.relative_path = c.relative_path
  RETURNING id, document_id, chunk_index
)
SELECT i.id, d.relative_path, i.chunk_index
FROM inserted i
JOIN documents d ON d.id = i.document_id
"""

COPY_EMBEDDINGS = """
COPY embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim, embedding)
FROM STDIN WITH (FORMAT BINARY)
"""
COPY_EMBEDDINGS_TYPES = ["int8", "text", "text", "int4", "vector"]

# Chunks of the given documents that lack a vector for the current provider/model/dim.
CHUNKS_MISSING_EMBEDDINGS = """
SELECT c.id, c.document_id, c.content, c.heading_path, c.relative_path, c.tags, c.wikilinks
FROM chunks c
WHERE c.document_id = ANY(%s)
  AND NOT EXISTS (SELECT 1 FROM embeddings e
                  WHERE e.chunk_id = c.id AND e.embedding_provider = %s
                    AND e.embedding_model = %s AND e.embedding_dim = %s)
ORDER BY c.document_id, c.chunk_index
"""

DELETE_DOCUMENTS = "DELETE FROM documents WHERE vault_path = %s AND relative_path = ANY(%s)"

# Chunks of a vault whose terms an older analyzer made, or none (written before the lexical
# columns existed), a batch at a time after the last id seen. The version is the literal of the
# partial index idx_chunks_lexical_stale_v3 (knowledge's migration 0011), so that index and
# idx_chunks_lexical_missing find them without reading the table; tests/knowledge/test_lexical.py
# checks that both agree with parsing/lexical.py ANALYZER_VERSION. A NULL vault path means
# every vault.
CHUNKS_LEXICAL_STALE = """
SELECT c.id, c.content, c.heading_path, c.relative_path
FROM chunks c
WHERE (c.lexical_version IS DISTINCT FROM 3 OR c.lexical_terms IS NULL) AND c.id > %(after_id)s
  AND (%(vault_path)s::text IS NULL
       OR c.document_id IN (SELECT id FROM documents WHERE vault_path = %(vault_path)s))
ORDER BY c.id
LIMIT %(limit)s
"""

# Only chunks still of an older analyzer: a concurrent rewrite of the note keeps its own terms.
FILL_CHUNKS_LEXICAL = """
UPDATE chunks c SET lexical_terms = v.terms::tsvector, lexical_length = v.length,
                    lexical_cells = v.cells::tsvector, lexical_version = %s
FROM unnest(%s::int8[], %s::text[], %s::int4[], %s::text[]) AS v(id, terms, length, cells)
WHERE c.id = v.id AND (c.lexical_version IS DISTINCT FROM 3 OR c.lexical_terms IS NULL)
"""

INSERT_RUN = """
INSERT INTO ingest_runs (vault_path, embedding_provider, embedding_model, embedding_dim, status)
VALUES (%s, %s, %s, %s, 'running')
RETURNING id
"""

FINISH_RUN = """
UPDATE ingest_runs SET status = %s, finished_at = now(), documents_added = %s,
  documents_updated = %s, documents_deleted = %s, documents_skipped = %s, chunks_written = %s,
  embeddings_written = %s, error_summary = %s, metadata = %s
WHERE id = %s
"""

FAIL_INTERRUPTED_RUNS = """
UPDATE ingest_runs SET status = 'failed', finished_at = now(),
  error_summary = 'interrupted: the run ended without recording its outcome (killed or crashed)'
WHERE vault_path = %s AND status = 'running'
"""

TRY_VAULT_LOCK = "SELECT pg_try_advisory_lock(%s)"
WAIT_VAULT_LOCK = "SELECT pg_advisory_lock(%s)"
RELEASE_VAULT_LOCK = "SELECT pg_advisory_unlock(%s)"

# Document versions (knowledge/store.py): in the transaction that wrote a batch of documents,
# what was built per document, checked against what the chunker made, then made active.
VERSIONS_BUILT = """
SELECT d.id, d.relative_path, d.content_hash, count(c.id) AS chunks,
       count(e.chunk_id) AS vectors  -- the unique index holds it: no vector is read
FROM documents d
LEFT JOIN chunks c ON c.document_id = d.id
LEFT JOIN embeddings e ON e.chunk_id = c.id
  AND e.embedding_provider = %s AND e.embedding_model = %s AND e.embedding_dim = %s
WHERE d.vault_path = %s AND d.relative_path = ANY(%s)
GROUP BY d.id
"""

VERSIONS_ACTIVATE = """
WITH built AS (
  SELECT * FROM unnest(%s::int8[], %s::text[], %s::int4[], %s::int4[])
    AS b(document_id, content_hash, chunks, vectors)
),
superseded AS (
  UPDATE document_versions v SET status = 'superseded'
  FROM built b WHERE v.document_id = b.document_id AND v.status = 'active'
  RETURNING v.id
),
inserted AS (
  INSERT INTO document_versions (document_id, content_hash, config_hash, config, status,
                                 chunk_count, vector_count, activated_at)
  SELECT b.document_id, b.content_hash, %s, %s::jsonb, 'active', b.chunks, b.vectors, now()
  FROM built b
  RETURNING id, document_id
)
UPDATE documents d SET active_version_id = i.id FROM inserted i WHERE d.id = i.document_id
"""

VERSION_FAILED = """
INSERT INTO document_versions (document_id, content_hash, config_hash, config, status, error)
SELECT id, %s, %s, %s::jsonb, 'failed', %s FROM documents
WHERE vault_path = %s AND relative_path = %s
"""

# A bulk first load builds the impact cells' GIN index once at the end instead of growing it
# row by row (knowledge/store.py lexical_index_deferred). The definition is migration 0011's.
LEXICAL_INDEX_NAME = "idx_chunks_lexical_cells"
LEXICAL_INDEX_CREATE = ("CREATE INDEX IF NOT EXISTS idx_chunks_lexical_cells ON chunks "
                        "USING gin (lexical_cells)")
LEXICAL_INDEX_DROP = "DROP INDEX IF EXISTS idx_chunks_lexical_cells"
LEXICAL_INDEX_PRESENT = "SELECT to_regclass('idx_chunks_lexical_cells') IS NOT NULL"
# Never wait behind a long search or another ingest for the drop: skip the deferral instead.
LOCK_TIMEOUT_SHORT = "SET LOCAL lock_timeout = '2s'"
BUILD_MEMORY = "SET LOCAL maintenance_work_mem = %s"
CHUNKS_COUNT = "SELECT count(*) FROM chunks"

# The planner's row estimate for chunks (-1: never analysed), and the refresh of the statistics
# of the tables an ingest writes (store.statistics_refresh): the row counts, and the columns
# joins and filters use (not the texts, terms and vectors, whose statistics cost most to make;
# autovacuum's next analysis makes those).
CHUNKS_ESTIMATE = "SELECT reltuples FROM pg_class WHERE oid = 'chunks'::regclass"
ANALYZE_INDEX_TABLES = """
ANALYZE documents, chunks (id, document_id, knowledge_base_id, chunk_index, relative_path,
                           content_hash, lexical_length, lexical_version),
        embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim)
"""
