"""The SQL of the audit log (audit_logs, audit/migrations/0002_audit_logs.sql)."""

ENTRY_INSERT = """
INSERT INTO audit_logs (actor, actor_kind, user_id, username, token_id, source, action,
                        object_type, object_id, object_name, changes, request_id, address)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
RETURNING id
"""

PRUNE = "SELECT audit_logs_prune(%s)"

# Newest first, each filter skipped when NULL; `before_id` pages backwards.
ENTRIES = """
SELECT id, created_at, actor, actor_kind, user_id, username, token_id, source, action,
       object_type, object_id, object_name, changes, request_id, address
FROM audit_logs
WHERE (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(actor)s::text IS NULL OR actor = %(actor)s OR username = %(actor)s)
  AND (%(action)s::text IS NULL OR action = %(action)s
       OR starts_with(action, %(action)s || '.'))
  AND (%(source)s::text IS NULL OR source = %(source)s)
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s)
ORDER BY id DESC
LIMIT %(limit)s
"""
