"""The review app's SQL: every value a %s parameter."""

# The stored document a version was announced for, with its active version, when that version
# is the one announced (same content): a later build may already have replaced it.
DOCUMENT_ACTIVE = """
SELECT d.id, d.knowledge_base_id, d.active_version_id
FROM documents d JOIN document_versions v ON v.id = d.active_version_id
WHERE d.vault_path = %s AND d.relative_path = %s AND v.content_hash = %s
"""

TASK_INSERT = """
INSERT INTO review_tasks (knowledge_base_id, document_id, document_version_id, kind, page,
                          table_index, bbox, rows, extracted_text, flags, confidence)
VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s::jsonb, %s)
ON CONFLICT DO NOTHING
"""

# A new version's arrival closes what was still open on the document's earlier versions.
TASKS_SUPERSEDE = """
UPDATE review_tasks SET status = 'superseded', resolved_at = now(),
       note = 'a newer version of the document replaced this one'
WHERE document_id = %s AND document_version_id <> %s AND status = 'open'
"""

# Pages excluded on an earlier version of the same content stay excluded in this one: the
# latest exclusion of each page is carried over as a task of the new version.
EXCLUSIONS_CARRY = """
INSERT INTO review_tasks (knowledge_base_id, document_id, document_version_id, kind, page,
                          table_index, bbox, rows, extracted_text, flags, confidence, status,
                          resolved_by, resolved_at, note)
SELECT DISTINCT ON (t.page) t.knowledge_base_id, t.document_id, %(version)s, t.kind, t.page,
       t.table_index, t.bbox, t.rows, t.extracted_text, t.flags, t.confidence, 'excluded',
       t.resolved_by, t.resolved_at, 'excluded on an earlier version of the same file'
FROM review_tasks t JOIN document_versions v ON v.id = t.document_version_id
WHERE t.document_id = %(document)s AND t.document_version_id <> %(version)s
  AND t.status = 'excluded' AND v.content_hash = %(content_hash)s
ORDER BY t.page, t.resolved_at DESC
ON CONFLICT (document_version_id, kind, page, COALESCE(table_index, -1))
DO UPDATE SET status = 'excluded', resolved_by = EXCLUDED.resolved_by,
              resolved_at = EXCLUDED.resolved_at, note = EXCLUDED.note
RETURNING page
"""

_TASK_COLUMNS = """
t.id, t.knowledge_base_id, b.slug AS knowledge_base, t.document_id, t.document_version_id,
COALESCE(d.source_name, d.relative_path) AS source, d.format, t.kind, t.page, t.table_index,
t.bbox, t.rows, t.extracted_text, t.corrected_text, t.flags, t.confidence, t.status, t.job_id,
t.resolved_by, t.resolved_at, t.note, t.created_at,
(d.active_version_id = t.document_version_id) AS current
FROM review_tasks t
JOIN knowledge_bases b ON b.id = t.knowledge_base_id
JOIN documents d ON d.id = t.document_id
"""

TASK_GET = "SELECT " + _TASK_COLUMNS + " WHERE t.id = %s"

TASK_FOR_UPDATE = "SELECT " + _TASK_COLUMNS + " WHERE t.id = %s FOR UPDATE OF t"

# A page of the queue: the caller's bases (and the filters), oldest open work first.
TASKS_LIST = ("SELECT " + _TASK_COLUMNS + """
WHERE t.knowledge_base_id = ANY(%(bases)s)
  AND (%(status)s::text IS NULL OR t.status = %(status)s)
  AND (%(kind)s::text IS NULL OR t.kind = %(kind)s)
ORDER BY t.id
LIMIT %(limit)s OFFSET %(offset)s
""")

TASKS_COUNT = """
SELECT count(*) FROM review_tasks t
WHERE t.knowledge_base_id = ANY(%(bases)s)
  AND (%(status)s::text IS NULL OR t.status = %(status)s)
  AND (%(kind)s::text IS NULL OR t.kind = %(kind)s)
"""

TASK_RESOLVE = """
UPDATE review_tasks SET status = %s, resolved_by = %s, resolved_at = now(), note = %s,
       corrected_text = %s
WHERE id = %s
"""

TASK_JOB_SET = "UPDATE review_tasks SET job_id = %s WHERE id = %s"

# Out of search: every chunk of the document whose pages include the excluded page (the search
# index follows through its change log, index/migrations/0002_change_log.sql).
PAGE_CHUNKS_DELETE = """
DELETE FROM chunks WHERE document_id = %s AND page_start <= %s AND page_end >= %s
"""

# The reviewed text of every page fixed on the document's current content, latest fix first:
# a fix builds on the fixes before it.
PAGE_FIXES = """
SELECT DISTINCT ON (t.page) t.page, t.corrected_text
FROM review_tasks t JOIN document_versions v ON v.id = t.document_version_id
JOIN documents d ON d.id = t.document_id
JOIN document_versions a ON a.id = d.active_version_id
WHERE t.document_id = %s AND t.status = 'fixed' AND t.corrected_text IS NOT NULL
  AND v.content_hash = a.content_hash
ORDER BY t.page, t.resolved_at DESC
"""

DOCUMENT_PLACE = """
SELECT d.vault_path, d.relative_path, d.status FROM documents d WHERE d.id = %s
"""

TASK_EXCLUDED = """
SELECT document_id, knowledge_base_id, page FROM review_tasks WHERE id = %s AND status = 'excluded'
"""

# A version built from the same file as a fixed one, without those fixes (a reindex, or an
# ingest that read the file again): the newest such fixed task, whose job builds the document
# once more with every fix of that content. None when the version already holds them all.
FIX_TO_CARRY = """
SELECT max(t.id)
FROM review_tasks t
JOIN document_versions v ON v.id = t.document_version_id
JOIN documents d ON d.id = t.document_id
WHERE t.document_id = %(document)s AND t.document_version_id <> %(version)s
  AND t.status = 'fixed' AND t.corrected_text IS NOT NULL
  AND v.content_hash = %(content_hash)s
  AND NOT coalesce(d.metadata -> 'reviewed_pages', '[]'::jsonb) @> jsonb_build_array(t.page)
"""
