from django.apps import AppConfig


class IndexConfig(AppConfig):
    name = "index"
    label = "search_index"
    verbose_name = "Search index"
    default_auto_field = "django.db.models.BigAutoField"
    # The tables of this app's migrations that no model names (tests/test_schema_ownership.py).
    tables_without_model = ("search_index_state", "search_index_changes")

    def ready(self) -> None:
        # Every process that writes chunks brings the indexes of the bases it wrote up to date
        # once its run has committed (`rag ingest`, `rag worker`, `rag watch`, the server).
        from index import maintenance
        from knowledge.signals import chunks_committed

        chunks_committed.connect(maintenance.on_chunks_committed,
                                 dispatch_uid="search_index_catch_up")
