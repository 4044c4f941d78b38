from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Durable background jobs: the queue of leased rows, the worker that runs their handlers,
    the `jobs` and `worker` commands and a read-only admin. Each app that has jobs registers its
    handlers in its own AppConfig.ready()."""

    name = "jobs"
    verbose_name = "Background jobs"
    default_auto_field = "django.db.models.BigAutoField"
    # The tables of this app's migrations that no model names (tests/test_schema_ownership.py).
    tables_without_model = ("job_workers",)
