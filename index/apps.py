from pathlib import Path

from django.apps import AppConfig


class IndexConfig(AppConfig):
    name = "index"
    label = "search_index"
    verbose_name = "Search index"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every process that writes chunks brings the indexes of the bases it wrote up to date
        # once its run has committed (`rag ingest`, `rag worker`, `rag watch`, the server).
        from index import maintenance
        from knowledge.signals import chunks_committed, schema_file_register

        chunks_committed.connect(maintenance.on_chunks_committed,
                                 dispatch_uid="search_index_catch_up")
        # Applied by migration 0001; a restore runs it again inside its transaction.
        schema_file_register(Path(__file__).resolve().parent / "schema.sql")
