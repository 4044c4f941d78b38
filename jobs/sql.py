"""Raw SQL of the background-jobs queue, as named constants. Every value is bound as a parameter.

A job belongs to a worker only while it holds the lease: `lease_owner` and the `lease_token`
the claim drew. Heartbeat, complete and fail match all three of id, owner and token, so a worker
whose lease expired and was reclaimed changes nothing (its statements match no row).
"""

# In the field order of jobs.queue.JobRecord.
JOB_COLUMNS = """id, type, resource, payload, status, stage, progress, attempt, max_attempts,
run_after, lease_owner, lease_until, last_error, result, created_at, updated_at, started_at,
finished_at"""

JOB_ENQUEUE = """
INSERT INTO background_jobs (type, resource, payload, max_attempts, run_after)
VALUES (%s, %s, %s::jsonb, %s, coalesce(%s::timestamptz, now()))
RETURNING id
"""

# One statement, one round trip per claim. `exhausted` first fails running jobs whose lease
# expired on their last attempt (their worker died or lost the database): running them again
# would exceed max_attempts, and nothing else would ever end them. Then the oldest due job is
# locked, by (run_after, id), among the queued ones and the running ones whose lease expired
# (reclaimed). Each kind is looked up on its own partial index (idx_background_jobs_claim,
# idx_background_jobs_lease), so a claim reads one index entry or two whatever the queue's
# depth; one query with an OR of both kinds would sort every due job (15 ms per claim at 50,000
# queued jobs, against 1 ms). SKIP LOCKED lets concurrent claims pass over each other's rows
# instead of waiting; the candidate not chosen stays locked only until the statement ends. All
# CTEs see one snapshot and pick disjoint rows (attempt >= / < max_attempts). A reclaimed job's
# last_error says whose lease expired, so the rerun is visible.
JOB_CLAIM = """
WITH exhausted AS (
  UPDATE background_jobs
  SET status = 'failed', finished_at = now(), updated_at = now(),
      lease_token = NULL, lease_until = NULL,
      last_error = 'lease of ' || coalesce(lease_owner, 'a worker') || ' expired on attempt '
                   || attempt || ' of ' || max_attempts
                   || ' (the worker stopped or lost the database); no attempts left'
  WHERE id IN (SELECT id FROM background_jobs
               WHERE status = 'running' AND lease_until < now() AND attempt >= max_attempts
               FOR UPDATE SKIP LOCKED)
), queued AS (
  SELECT id, run_after FROM background_jobs
  WHERE status = 'queued' AND run_after <= now()
  ORDER BY run_after, id
  LIMIT 1
  FOR UPDATE SKIP LOCKED
), expired AS (
  SELECT id, run_after FROM background_jobs
  WHERE status = 'running' AND lease_until < now() AND attempt < max_attempts
  ORDER BY run_after, id
  LIMIT 1
  FOR UPDATE SKIP LOCKED
), next AS (
  SELECT id FROM (SELECT * FROM queued UNION ALL SELECT * FROM expired) AS candidates
  ORDER BY run_after, id
  LIMIT 1
)
UPDATE background_jobs j
SET status = 'running', attempt = j.attempt + 1, lease_owner = %s,
    lease_token = gen_random_uuid(), lease_until = now() + make_interval(secs => %s),
    started_at = coalesce(j.started_at, now()), stage = '', progress = 0, updated_at = now(),
    last_error = CASE WHEN j.status = 'running'
                      THEN 'lease of ' || coalesce(j.lease_owner, 'a worker')
                           || ' expired on attempt ' || j.attempt || '; reclaimed'
                      ELSE j.last_error END
FROM next
WHERE j.id = next.id
RETURNING j.id, j.type, j.resource, j.payload, j.attempt, j.max_attempts, j.lease_token
"""

# An expired lease may still be extended while nobody has reclaimed the job: it is still
# this worker's, and it proves the worker is alive.
JOB_HEARTBEAT = """
UPDATE background_jobs
SET lease_until = now() + make_interval(secs => %s), stage = coalesce(%s, stage),
    progress = coalesce(%s, progress), updated_at = now()
WHERE id = %s AND lease_owner = %s AND lease_token = %s AND status = 'running'
RETURNING id
"""

JOB_COMPLETE = """
UPDATE background_jobs
SET status = 'succeeded', result = %s::jsonb, progress = 1, finished_at = now(),
    lease_token = NULL, lease_until = NULL, updated_at = now()
WHERE id = %s AND lease_owner = %s AND lease_token = %s AND status = 'running'
RETURNING id
"""

# Retryable with attempts left: back to queued after the backoff. Otherwise failed for good.
# Either way last_error is kept, and lease_owner stays to say who ran it last.
JOB_FAIL = """
UPDATE background_jobs
SET status = CASE WHEN %(retryable)s AND attempt < max_attempts THEN 'queued' ELSE 'failed' END,
    run_after = CASE WHEN %(retryable)s AND attempt < max_attempts
                     THEN now() + make_interval(secs => %(delay)s) ELSE run_after END,
    finished_at = CASE WHEN %(retryable)s AND attempt < max_attempts THEN NULL ELSE now() END,
    last_error = %(error)s, lease_token = NULL, lease_until = NULL, updated_at = now()
WHERE id = %(id)s AND lease_owner = %(owner)s AND lease_token = %(token)s AND status = 'running'
RETURNING status
"""

# A job handed back by a worker that stops (its handler stopped at a safe point): queued again
# at once, without spending the attempt, for the next worker to run from the start.
JOB_RELEASE = """
UPDATE background_jobs
SET status = 'queued', attempt = greatest(attempt - 1, 0), run_after = now(), stage = '',
    progress = 0, lease_owner = NULL, lease_token = NULL, lease_until = NULL, started_at = NULL,
    updated_at = now()
WHERE id = %s AND lease_owner = %s AND lease_token = %s AND status = 'running'
RETURNING id
"""

# Cancel and retry return the job as JOB_GET reads it, so a change needs one round trip.
# Clearing the token ends a running job's lease: its worker's next heartbeat fails to match, so
# the handler stops at its next progress report, and its result is never written.
JOB_CANCEL = f"""
UPDATE background_jobs
SET status = 'cancelled', finished_at = now(), lease_token = NULL, lease_until = NULL,
    updated_at = now()
WHERE id = %s AND status IN ('queued', 'running')
RETURNING {JOB_COLUMNS}
"""

# A retried job starts over with its whole attempt budget; last_error keeps the reason of the
# failure until the next attempt replaces it.
JOB_RETRY = f"""
UPDATE background_jobs
SET status = 'queued', attempt = 0, run_after = now(), stage = '', progress = 0,
    result = '{{}}'::jsonb, lease_owner = NULL, lease_token = NULL, lease_until = NULL,
    started_at = NULL, finished_at = NULL, updated_at = now()
WHERE id = %s AND status IN ('failed', 'cancelled')
RETURNING {JOB_COLUMNS}
"""

JOB_GET = f"SELECT {JOB_COLUMNS} FROM background_jobs WHERE id = %s"

JOBS_LIST = f"""
SELECT {JOB_COLUMNS} FROM background_jobs
WHERE (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY id DESC
LIMIT %(limit)s
"""

# Workers alive (table job_workers): a row per worker thread, refreshed while it waits.
WORKER_SEEN = """
INSERT INTO job_workers (owner) VALUES (%s)
ON CONFLICT (owner) DO UPDATE SET seen_at = now()
"""

WORKER_GONE = "DELETE FROM job_workers WHERE owner = %s"

# Rows of workers that died without removing theirs are dropped after a day.
WORKERS_STALE_DELETE = "DELETE FROM job_workers WHERE seen_at < now() - interval '1 day'"

WORKERS_ALIVE = """
SELECT (SELECT count(*) FROM job_workers
        WHERE seen_at > now() - make_interval(secs => %(within)s)),
       (SELECT count(*) FROM background_jobs WHERE status = 'running' AND lease_until > now())
"""
