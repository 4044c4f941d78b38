from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge base"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The document jobs' handlers, wherever a worker runs.
        from jobs.worker import job_handler_register
        from knowledge import documents

        job_handler_register(documents.JOB_INGEST, documents.document_ingest_job)
        job_handler_register(documents.JOB_REINDEX, documents.document_ingest_job)
        job_handler_register(documents.JOB_DELETE, documents.document_delete_job)
