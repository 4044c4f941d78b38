"""The SQL of callers, grants and API tokens."""

KB_IDS = "SELECT id FROM knowledge_bases ORDER BY id"

KB_IDS_BY_SLUG = "SELECT slug, id FROM knowledge_bases WHERE slug = ANY(%s)"
KB_SLUGS = "SELECT id, slug FROM knowledge_bases"

# The tables of grants and tokens are Django's (access/models.py), named as when they were the
# knowledge app's.
TOKEN_LOOKUP = """
SELECT t.id, t.token_hash, u.id, u.username, u.is_superuser, t.read_only, t.narrowed,
       ARRAY(SELECT b.knowledgebase_id FROM knowledge_apitoken_knowledge_bases b
             WHERE b.apitoken_id = t.id)
FROM knowledge_apitoken t
JOIN auth_user u ON u.id = t.user_id
WHERE t.token_hash = %s AND t.revoked_at IS NULL AND u.is_active
"""

TOKEN_TOUCH = """
UPDATE knowledge_apitoken SET last_used_at = now()
WHERE id = %s AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => %s))
"""

USER_GRANTS = "SELECT knowledge_base_id, role FROM knowledge_grant WHERE user_id = %s"

TOKENS_ACTIVE_EXIST = "SELECT EXISTS (SELECT 1 FROM knowledge_apitoken WHERE revoked_at IS NULL)"

USER_BY_NAME = "SELECT id FROM auth_user WHERE username = %s"

TOKEN_INSERT = """
INSERT INTO knowledge_apitoken (user_id, name, prefix, token_hash, read_only, narrowed,
                                created_at)
VALUES (%s, %s, %s, %s, %s, %s, now())
RETURNING id
"""

TOKEN_BASE_INSERT = """
INSERT INTO knowledge_apitoken_knowledge_bases (apitoken_id, knowledgebase_id) VALUES (%s, %s)
"""

TOKENS_LIST = """
SELECT t.id, t.prefix, t.name, u.username AS user, t.read_only,
       ARRAY(SELECT k.slug FROM knowledge_apitoken_knowledge_bases b
             JOIN knowledge_bases k ON k.id = b.knowledgebase_id
             WHERE b.apitoken_id = t.id ORDER BY k.slug) AS knowledge_bases,
       t.created_at, t.last_used_at, t.revoked_at
FROM knowledge_apitoken t JOIN auth_user u ON u.id = t.user_id
ORDER BY t.id
"""

# (id, prefix, user name, name) of the token revoked now, for its audit entry.
TOKEN_REVOKE = """
UPDATE knowledge_apitoken t SET revoked_at = now() FROM auth_user u
WHERE t.id = %s AND t.revoked_at IS NULL AND u.id = t.user_id
RETURNING t.id, t.prefix, u.username, t.name
"""

# Many tokens at once (the admin's action); those revoked now, not before.
TOKENS_REVOKE = """
UPDATE knowledge_apitoken t SET revoked_at = now() FROM auth_user u
WHERE t.id = ANY(%s) AND t.revoked_at IS NULL AND u.id = t.user_id
RETURNING t.id, t.prefix, u.username, t.name
"""

# Bad bearer tokens per address and minute (access/throttling.py).
TOKEN_FAILURES_NOW = """
SELECT failures FROM token_failures
WHERE address = %s AND window_start = date_trunc('minute', now())
"""

TOKEN_FAILURE_RECORD = """
INSERT INTO token_failures (address, window_start, failures)
VALUES (%s, date_trunc('minute', now()), 1)
ON CONFLICT (address) DO UPDATE
SET failures = CASE WHEN token_failures.window_start = date_trunc('minute', now())
                    THEN token_failures.failures + 1 ELSE 1 END,
    window_start = date_trunc('minute', now())
RETURNING failures
"""

TOKEN_FAILURES_PAST_DELETE = """
DELETE FROM token_failures WHERE window_start < date_trunc('minute', now())
"""

# The bases a caller reads, for GET /me (access/selectors.py): slugs and names only, read here
# rather than through the knowledge app, which sits above access.
KB_NAMES = "SELECT id, slug, name FROM knowledge_bases WHERE id = ANY(%s) ORDER BY slug"
