"""Raw SQL of the knowledge app, as named constants. Every value is bound as a parameter."""

SCHEMA_STATE = """
SELECT
  (SELECT count(*) FROM pg_catalog.pg_tables
    WHERE schemaname = current_schema() AND tablename = ANY(%s))
  + (SELECT count(*) FROM pg_catalog.pg_attribute
      WHERE attrelid = to_regclass('chunks') AND attname = %s AND NOT attisdropped),
  EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'vector')
"""

INDEX_COUNTS = """
SELECT
  (SELECT count(*) FROM documents),
  (SELECT count(*) FROM chunks),
  (SELECT count(*) FROM embeddings
    WHERE embedding_provider = %s AND embedding_model = %s AND embedding_dim = %s)
"""

# The same counts within some knowledge bases only (what one caller may see).
INDEX_COUNTS_SCOPED = """
SELECT
  (SELECT count(*) FROM documents WHERE knowledge_base_id = ANY(%(ids)s) AND status = 'active'),
  (SELECT count(*) FROM chunks WHERE knowledge_base_id = ANY(%(ids)s)),
  (SELECT count(*) FROM embeddings e JOIN chunks c ON c.id = e.chunk_id
    WHERE e.embedding_provider = %(provider)s AND e.embedding_model = %(model)s
      AND e.embedding_dim = %(dim)s AND c.knowledge_base_id = ANY(%(ids)s))
"""

# Every vault the index holds, with its counts and its latest run.
VAULTS = """
SELECT v.vault_path,
       (SELECT count(*) FROM documents d WHERE d.vault_path = v.vault_path),
       (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id
         WHERE d.vault_path = v.vault_path),
       r.started_at, r.status
FROM (SELECT DISTINCT vault_path FROM documents) v
LEFT JOIN LATERAL (SELECT started_at, status FROM ingest_runs r
                   WHERE r.vault_path = v.vault_path ORDER BY r.id DESC LIMIT 1) r ON true
ORDER BY v.vault_path
"""

# Folders with indexed documents, and folders registered as knowledge-base sources.
INDEXED_VAULT_PATHS = """
SELECT vault_path FROM documents UNION SELECT path FROM knowledge_base_sources
"""

# Chunks and embeddings cascade; the vault's ingest history stays as a record.
FORGET_VAULT = """
WITH gone AS (DELETE FROM documents WHERE vault_path = %s RETURNING id)
SELECT count(*) FROM gone
"""

# A forgotten vault folder is no knowledge base's source any more (an upload area stays).
FORGET_VAULT_SOURCE = "DELETE FROM knowledge_base_sources WHERE path = %s AND kind = 'vault'"

CORPUS_FINGERPRINT = """
SELECT md5(string_agg(vault_path || '/' || relative_path || ':' || content_hash, E'\\n'
                      ORDER BY vault_path, relative_path))
FROM documents
"""

# Knowledge bases and sources (knowledge/bases.py).
KB_INSERT = """
INSERT INTO knowledge_bases (slug, name, description, outbound) VALUES (%s, %s, %s, %s)
ON CONFLICT (slug) DO NOTHING
RETURNING id
"""

# The local-only bases among these (by id or slug), for the outbound policy (outbound.py).
KB_LOCAL_ONLY = """
SELECT slug FROM knowledge_bases
WHERE (id = ANY(%s::int8[]) OR slug = ANY(%s::text[])) AND outbound = 'local-only'
ORDER BY slug
"""

KB_UPDATE = """
UPDATE knowledge_bases
SET name = coalesce(%s, name), description = coalesce(%s, description),
    outbound = coalesce(%s, outbound), updated_at = now()
WHERE slug = %s
RETURNING id
"""

# A base's documents for GET /knowledge-bases/{slug}/documents (knowledge/selectors.py), newest
# change first; `uploaded`: of the base's upload area (those the API can delete). The chunk
# count is a subquery per row, so only the rows of the page are counted. An upload's
# relative_path is its source name, as in /search results (its stored file name is no path of it).
DOCUMENTS_OF_BASE = """
SELECT d.id, d.title, d.format, d.original_name,
       coalesce(d.source_name, d.relative_path) AS relative_path, d.status, d.page_count,
       d.ocr_page_count, d.size_bytes, d.content_hash, d.metadata ->> 'error' AS error,
       (SELECT count(*) FROM chunks c WHERE c.document_id = d.id) AS chunks,
       coalesce(s.kind = 'uploads', false) AS uploaded, d.created_at, d.updated_at
FROM documents d LEFT JOIN knowledge_base_sources s ON s.path = d.vault_path
WHERE d.knowledge_base_id = %(base)s
  AND (%(status)s::text IS NULL OR d.status = %(status)s::text)
  AND (%(format)s::text IS NULL OR d.format = %(format)s::text)
ORDER BY d.updated_at DESC, d.id DESC
LIMIT %(limit)s OFFSET %(offset)s
"""

DOCUMENTS_OF_BASE_COUNT = """
SELECT count(*) FROM documents d
WHERE d.knowledge_base_id = %(base)s
  AND (%(status)s::text IS NULL OR d.status = %(status)s::text)
  AND (%(format)s::text IS NULL OR d.format = %(format)s::text)
"""

# A document's chunks in order from a chunk index on, a batch at a time
# (knowledge/document_text.py reads no more of a long document than it returns).
DOCUMENT_TEXT_CHUNKS = """
SELECT chunk_index, heading_path, page_start, page_end, content FROM chunks
WHERE document_id = %s AND chunk_index >= %s
ORDER BY chunk_index
LIMIT %s
"""

# An empty base (no documents left) with its sources; `default` is never removed. Grants and
# token links are Django's rows (knowledge/bases.py kb_delete removes them first).
KB_DELETE_EMPTY = """
WITH base AS (
  SELECT b.id FROM knowledge_bases b
  WHERE b.slug = %s AND b.slug <> 'default'
    AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.knowledge_base_id = b.id)
), sources AS (
  DELETE FROM knowledge_base_sources s USING base WHERE s.knowledge_base_id = base.id
)
DELETE FROM knowledge_bases b USING base WHERE b.id = base.id
RETURNING b.id
"""

KB_SOURCE_INSERT = """
INSERT INTO knowledge_base_sources (knowledge_base_id, kind, path) VALUES (%s, %s, %s)
ON CONFLICT (path) DO NOTHING
RETURNING id
"""

KB_SOURCE_OWNER = """
SELECT s.knowledge_base_id, b.slug FROM knowledge_base_sources s
JOIN knowledge_bases b ON b.id = s.knowledge_base_id
WHERE s.path = %s
"""

# A folder that is a source of `default` (the slug of the last parameter) only because it was
# ingested before it had a base of its own is taken over by the base it is added to.
KB_SOURCE_CLAIM = """
UPDATE knowledge_base_sources s SET knowledge_base_id = %s, kind = %s
FROM knowledge_bases b
WHERE s.path = %s AND b.id = s.knowledge_base_id AND b.slug = %s
RETURNING s.id
"""

KB_DEFAULT_SOURCE_ENSURE = """
INSERT INTO knowledge_base_sources (knowledge_base_id, kind, path)
SELECT id, 'vault', %s FROM knowledge_bases WHERE slug = %s
ON CONFLICT (path) DO NOTHING
"""

# The chunks follow by the documents_knowledge_base_follow trigger, in this transaction.
KB_DOCUMENTS_MOVE = """
UPDATE documents SET knowledge_base_id = %s
WHERE vault_path = %s AND knowledge_base_id IS DISTINCT FROM %s
"""

KB_LIST = """
SELECT b.id, b.slug, b.name, b.description, b.outbound,
       (SELECT count(*) FROM documents d WHERE d.knowledge_base_id = b.id AND d.status = 'active')
         AS documents,
       (SELECT count(*) FROM chunks c WHERE c.knowledge_base_id = b.id) AS chunks
FROM knowledge_bases b
WHERE (%s::text[] IS NULL OR b.slug = ANY(%s::text[]))
  AND (%s::int8[] IS NULL OR b.id = ANY(%s::int8[]))
ORDER BY b.slug
"""

KB_SOURCES = """
SELECT knowledge_base_id, kind, path FROM knowledge_base_sources
WHERE knowledge_base_id = ANY(%s) ORDER BY path
"""

# Documents through the API (knowledge/documents.py).
UPLOAD_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))"

DOCUMENT_BY_HASH = """
SELECT d.id,
       (SELECT j.id FROM background_jobs j WHERE j.resource = 'document:' || d.id
        ORDER BY j.id DESC LIMIT 1),
       d.status
FROM documents d
JOIN knowledge_base_sources s ON s.path = d.vault_path AND s.kind = 'uploads'
WHERE d.knowledge_base_id = %s AND d.content_hash = %s AND d.status <> 'deleting'
ORDER BY d.id LIMIT 1
"""

DOCUMENT_UPLOAD_INSERT = """
INSERT INTO documents (vault_path, knowledge_base_id, relative_path, file_path, content_hash,
                       size_bytes, format, original_name, source_name, status, title)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 'queued', NULL)
RETURNING id
"""

# Upload names (knowledge/upload_names.py): a base's uploads are named one at a time.
UPLOAD_NAMES_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('upload-names:' || %s, 7))"

# The names of a base's documents (an upload's source name, else the path) with a prefix,
# lowercased.
UPLOAD_NAMES_TAKEN = """
SELECT lower(coalesce(source_name, relative_path)) FROM documents
WHERE knowledge_base_id = %s AND starts_with(lower(coalesce(source_name, relative_path)), lower(%s))
"""

# Uploads stored before source names, oldest first (`rag db init` names them).
UPLOADS_UNNAMED = """
SELECT d.id, d.knowledge_base_id, d.relative_path, d.original_name, d.title
FROM documents d JOIN knowledge_base_sources s ON s.path = d.vault_path AND s.kind = 'uploads'
WHERE d.source_name IS NULL
ORDER BY d.id
FOR UPDATE OF d
"""

UPLOAD_NAME_SET = "UPDATE documents SET source_name = %s, title = %s WHERE id = %s"

# Chunks stored under their upload's generated file name take its source name; their lexical
# terms (which hold the path) are left for re-analysis.
UPLOAD_CHUNKS_REPOINT = """
UPDATE chunks c SET relative_path = d.source_name, lexical_version = NULL
FROM documents d
WHERE c.document_id = d.id AND d.source_name IS NOT NULL AND c.relative_path <> d.source_name
"""

# relative_path as in DOCUMENTS_OF_BASE: an upload's source name.
DOCUMENT_DETAIL = """
SELECT d.id, d.knowledge_base_id, b.slug AS knowledge_base, d.title, d.format,
       d.original_name, coalesce(d.source_name, d.relative_path) AS relative_path, d.status,
       d.page_count, d.ocr_page_count,
       d.size_bytes, d.content_hash, d.metadata ->> 'error' AS error,
       (SELECT count(*) FROM chunks c WHERE c.document_id = d.id) AS chunks,
       d.active_version_id, d.created_at, d.updated_at
FROM documents d JOIN knowledge_bases b ON b.id = d.knowledge_base_id
WHERE d.id = %s
"""

DOCUMENT_VERSIONS = """
SELECT id, status, content_hash, config_hash, chunk_count, vector_count, error, created_at,
       activated_at
FROM document_versions WHERE document_id = %s ORDER BY id DESC LIMIT 20
"""

DOCUMENT_LAST_JOB = """
SELECT id, type, status, stage, progress, attempt, last_error, updated_at
FROM background_jobs WHERE resource = %s ORDER BY id DESC LIMIT 1
"""

DOCUMENT_FOR_UPDATE = """
SELECT d.id, d.knowledge_base_id, s.kind, d.status
FROM documents d LEFT JOIN knowledge_base_sources s ON s.path = d.vault_path
WHERE d.id = %s
FOR UPDATE OF d
"""

DOCUMENT_BASE = "SELECT knowledge_base_id FROM documents WHERE id = %s"

# A document's readable name and its base's slug, for its audit entry.
DOCUMENT_AUDIT_NAME = """
SELECT coalesce(nullif(d.source_name, ''), d.relative_path), k.slug
FROM documents d JOIN knowledge_bases k ON k.id = d.knowledge_base_id
WHERE d.id = %s
"""

DOCUMENT_CHUNKS_DELETE = "DELETE FROM chunks WHERE document_id = %s"

DOCUMENT_STATUS_SET = "UPDATE documents SET status = %s, updated_at = now() WHERE id = %s"

DOCUMENT_SETTLE = """
UPDATE documents d SET
  status = CASE WHEN EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)
                THEN 'active' ELSE 'failed' END,
  metadata = d.metadata || jsonb_build_object('error', %s::text), updated_at = now()
WHERE d.id = %s AND d.status = 'queued'
"""

DOCUMENT_REINDEX_MARK = """
UPDATE documents SET status = 'queued', updated_at = now() WHERE id = %s AND status <> 'deleting'
"""

# The job's document: where its file is, its status, and whether it is an upload.
DOCUMENT_JOB_ROW = """
SELECT d.vault_path, d.relative_path, d.status,
       EXISTS (SELECT 1 FROM knowledge_base_sources s
               WHERE s.path = d.vault_path AND s.kind = 'uploads') AS uploaded
FROM documents d WHERE d.id = %s
"""

DOCUMENT_CHUNK_COUNT = "SELECT count(*) FROM chunks WHERE document_id = %s"

DOCUMENT_DELETING_PATH = """
SELECT file_path, knowledge_base_id FROM documents WHERE id = %s AND status = 'deleting'
"""

DOCUMENT_DELETING_DELETE = "DELETE FROM documents WHERE id = %s AND status = 'deleting'"

# One chunk by id (knowledge/selectors.py); `source` is the chunk's relative path, as in
# /search results and /ask citations.
CHUNK_DETAIL = """
SELECT c.id, c.knowledge_base_id, b.slug AS knowledge_base, c.document_id, c.chunk_index,
       c.relative_path AS source, c.heading_path, c.page_start, c.page_end, c.content
FROM chunks c JOIN knowledge_bases b ON b.id = c.knowledge_base_id
WHERE c.id = %s
"""

# The chunks a trace recorded (answering/replay.py): by id, and at their place in their document
# (document id, chunk index), where a re-ingest of the document put new rows.
CHUNKS_BY_ID_OR_PLACE = """
SELECT c.id, c.document_id, c.chunk_index, c.relative_path, c.heading_path, c.page_start,
       c.page_end, c.content, c.content_hash
FROM chunks c
WHERE c.id = ANY(%s::int8[])
   OR (c.document_id, c.chunk_index) IN (SELECT * FROM unnest(%s::int8[], %s::int4[]))
"""

# The dates the context gives each cited document (answering/context.py): its frontmatter's
# own date when it has one, else when its file last changed.
DOCUMENT_DATES = """
SELECT id AS document_id,
       COALESCE(frontmatter->>'updated', frontmatter->>'date', frontmatter->>'modified',
                frontmatter->>'created') AS stated,
       to_char(to_timestamp(mtime_ns / 1e9) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS changed
FROM documents WHERE id = ANY(%s)
"""


# Wikilinks (knowledge/wikilinks.py), per document: the first chunk whose heading path holds one
# of the headings asked for, and its first chunk. Only those rows are read, not every chunk of a
# long linked document.
WIKILINK_HEADED_SQL = """
SELECT DISTINCT ON (c.document_id, lower(h.heading)) c.document_id, lower(h.heading), c.id
FROM chunks c CROSS JOIN LATERAL unnest(c.heading_path) AS h(heading)
WHERE c.document_id = ANY(%s) AND lower(h.heading) = ANY(%s)
ORDER BY c.document_id, lower(h.heading), c.chunk_index
"""
WIKILINK_FIRST_SQL = """
SELECT DISTINCT ON (document_id) document_id, id FROM chunks
WHERE document_id = ANY(%s) ORDER BY document_id, chunk_index
"""
