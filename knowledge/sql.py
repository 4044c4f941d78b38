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

TRY_VAULT_LOCK = "SELECT pg_try_advisory_lock(%s)"
WAIT_VAULT_LOCK = "SELECT pg_advisory_lock(%s)"
RELEASE_VAULT_LOCK = "SELECT pg_advisory_unlock(%s)"

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

# The dates the context gives each cited document (answering/context.py): its frontmatter's
# own date when it has one, else when its file last changed.
DOCUMENT_DATES = """
SELECT id AS document_id,
       COALESCE(frontmatter->>'updated', frontmatter->>'date', frontmatter->>'modified',
                frontmatter->>'created') AS stated,
       to_char(to_timestamp(mtime_ns / 1e9) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS changed
FROM documents WHERE id = ANY(%s)
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
