from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge base"
    default_auto_field = "django.db.models.BigAutoField"
    # The tables of this app's migrations that no model names (tests/test_schema_ownership.py).
    tables_without_model = ("lexical_stats", "lexical_scope_stats", "lexical_length_stats",
                            "lexical_term_stats", "vector_index_tuning", "restore_runs")

    def ready(self) -> None:
        # The document jobs' handlers, wherever a worker runs.
        from jobs.worker import job_handler_register
        from knowledge import documents

        job_handler_register(documents.JOB_INGEST, documents.document_ingest_job)
        job_handler_register(documents.JOB_REINDEX, documents.document_ingest_job)
        job_handler_register(documents.JOB_DELETE, documents.document_delete_job)
