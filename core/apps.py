from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The installation itself: configuration, errors, database plumbing, the embedded
    PostgreSQL and the commands about the installation (`rag pg`, `serve`, `config`,
    `ensure_admin`). It imports no other app of the project."""

    name = "core"
    verbose_name = "local-rag core"
