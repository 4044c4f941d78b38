from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Review queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Tasks are made wherever versions are stored (`rag ingest`, the worker, `rag watch`),
        # and the exclusion and fix jobs run wherever a worker runs.
        from jobs.worker import job_handler_register
        from knowledge.signals import versions_stored
        from review import jobs, recording

        versions_stored.connect(recording.on_versions_stored, dispatch_uid="review_tasks")
        job_handler_register(jobs.JOB_EXCLUDE, jobs.review_exclude_job)
        job_handler_register(jobs.JOB_FIX, jobs.review_fix_job)
