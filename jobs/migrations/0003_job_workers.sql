-- The job workers that are alive (jobs/worker.py): each worker thread writes its row every few
-- seconds while it waits for work and removes it when it stops. /health/ready counts a worker
-- seen lately, or a running job whose lease is current (a worker busy with a long job writes
-- its lease, not this row).
CREATE TABLE IF NOT EXISTS job_workers (
    owner TEXT PRIMARY KEY,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    seen_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
