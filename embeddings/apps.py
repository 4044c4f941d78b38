from django.apps import AppConfig


class EmbeddingsConfig(AppConfig):
    """The embedding providers and the outbound policy; its one command is `rag embeddings`."""

    name = "embeddings"
    verbose_name = "Embeddings"
