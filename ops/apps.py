from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operators' commands: `rag pg`, `rag serve`, `rag db`, `rag config`, backup and restore."""

    name = "ops"
    verbose_name = "Operations"
