-- The audit log (audit/records.py): who (a user, a token, or `cli:<os user>`), from where (api,
-- cli, workbench, admin), which action (dotted: knowledge_base.create, grant.update, ...), on
-- which object (type, id, readable name), what changed (a bounded before/after summary), the
-- request's id and the time. One row per action, written in the action's own transaction.
CREATE TABLE IF NOT EXISTS audit_logs (
  id BIGSERIAL PRIMARY KEY,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  actor TEXT NOT NULL,
  actor_kind TEXT NOT NULL CHECK (actor_kind IN ('user', 'token', 'cli', 'operator',
                                                 'anonymous')),
  user_id INTEGER,
  username TEXT,
  token_id BIGINT,
  source TEXT NOT NULL CHECK (source IN ('api', 'cli', 'workbench', 'admin')),
  action TEXT NOT NULL CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$'),
  object_type TEXT NOT NULL DEFAULT '',
  object_id TEXT NOT NULL DEFAULT '',
  object_name TEXT NOT NULL DEFAULT '',
  changes JSONB NOT NULL DEFAULT '{}'::jsonb,
  request_id TEXT NOT NULL DEFAULT '',
  address TEXT
);
CREATE INDEX IF NOT EXISTS idx_audit_logs_created_at ON audit_logs (created_at);
CREATE INDEX IF NOT EXISTS idx_audit_logs_action ON audit_logs (action, id);
CREATE INDEX IF NOT EXISTS idx_audit_logs_username ON audit_logs (username, id);

-- Append-only: every UPDATE and TRUNCATE is refused, and every DELETE but audit_logs_prune()'s
-- of rows older than the retention it was given. The triggers hold for any role, the table's
-- owner included, short of dropping or disabling them. The cut-off travels in a transaction-local setting: a
-- session that set it by hand could do no more than the function does, delete rows older than
-- a day at least; the trigger refuses any later cut-off.
CREATE OR REPLACE FUNCTION audit_logs_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  prune_before TEXT := current_setting('localrag.audit_prune_before', true);
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF coalesce(prune_before, '') <> ''
       AND prune_before::timestamptz <= now() - interval '1 day'
       AND OLD.created_at < prune_before::timestamptz THEN
      RETURN OLD;
    END IF;
  END IF;
  RAISE EXCEPTION 'audit_logs is append-only: % refused', TG_OP
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'expired entries are removed only by audit_logs_prune(retention_days)';
END;
$$;

CREATE OR REPLACE TRIGGER audit_logs_append_only BEFORE UPDATE OR DELETE ON audit_logs
  FOR EACH ROW EXECUTE FUNCTION audit_logs_append_only();
-- TRUNCATE empties a table without a row's trigger: refused as a statement.
CREATE OR REPLACE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON audit_logs
  FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_append_only();

-- Retention, the one way out of the log: deletes the entries older than `retention_days` (at
-- least 1) and returns how many. The cut-off it sets lives only as long as its transaction.
CREATE OR REPLACE FUNCTION audit_logs_prune(retention_days INTEGER) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
  removed BIGINT;
BEGIN
  IF retention_days IS NULL OR retention_days < 1 THEN
    RAISE EXCEPTION 'audit_logs_prune: retention_days must be at least 1, got %', retention_days
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM set_config('localrag.audit_prune_before',
                     (now() - make_interval(days => retention_days))::text, true);
  DELETE FROM audit_logs WHERE created_at < now() - make_interval(days => retention_days);
  GET DIAGNOSTICS removed = ROW_COUNT;
  PERFORM set_config('localrag.audit_prune_before', '', true);
  RETURN removed;
END;
$$;
