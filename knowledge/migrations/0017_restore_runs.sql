-- Each `rag restore` into this database (ops/restore.py): written in the restore's own
-- transaction, so a row here says that the restore committed; finished_at once its uploads are
-- in place and its schema is up to date.
CREATE TABLE IF NOT EXISTS restore_runs (
    id TEXT PRIMARY KEY,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at TIMESTAMPTZ
);
