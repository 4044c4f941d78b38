from django.apps import AppConfig


class WatchingConfig(AppConfig):
    """The folder watch: `rag watch`, the watcher `rag serve` starts, and the vault sync job."""

    name = "watching"
    verbose_name = "Folder watch"

    def ready(self) -> None:
        # The watched folders' sync job, wherever a worker runs.
        from jobs.worker import job_handler_register
        from watching import sync

        job_handler_register(sync.JOB_VAULT_SYNC, sync.vault_sync_job)
