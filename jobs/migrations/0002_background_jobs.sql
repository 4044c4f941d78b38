-- Durable background jobs (jobs/queue.py). A worker claims a job with one statement (FOR
-- UPDATE SKIP LOCKED) and holds it by a lease: lease_owner and a fresh lease_token per claim.
-- Heartbeats, completion and failure match both, so a worker whose lease expired and was
-- reclaimed by another cannot overwrite its successor's work.
CREATE TABLE IF NOT EXISTS background_jobs (
  id BIGSERIAL PRIMARY KEY,
  type TEXT NOT NULL,
  resource TEXT NOT NULL DEFAULT '',  -- what it works on, e.g. "document:42"
  payload JSONB NOT NULL DEFAULT '{}'::jsonb,
  status TEXT NOT NULL DEFAULT 'queued'
    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  stage TEXT NOT NULL DEFAULT '',
  progress REAL NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
  run_after TIMESTAMPTZ NOT NULL DEFAULT now(),
  lease_owner TEXT,
  lease_token UUID,
  lease_until TIMESTAMPTZ,
  last_error TEXT,
  result JSONB NOT NULL DEFAULT '{}'::jsonb,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at TIMESTAMPTZ,
  finished_at TIMESTAMPTZ
);
-- The claim reads queued jobs due now, oldest first, and running jobs whose lease expired.
CREATE INDEX IF NOT EXISTS idx_background_jobs_claim ON background_jobs (run_after, id)
  WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS idx_background_jobs_lease ON background_jobs (lease_until)
  WHERE status = 'running';
CREATE INDEX IF NOT EXISTS idx_background_jobs_resource ON background_jobs (resource, id);
