"""`rag config [--json]` — the resolved configuration, never the API key's value."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import Config, get_config
from embeddings.providers import embedding_native_dim


class Command(RagCommand):
    help = "Print the resolved configuration: NAME = value (source)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()
        items = config.display_items()
        native_dim = embedding_native_dim(config=config)
        if options["json"]:
            self.write_json({
                "variables": {name: {"value": value, "source": source}
                              for name, value, source in items},
                "resolved_threshold": {"value": config.threshold,
                                       "origin": config.threshold_origin},
                "resolved_retrieval": {"rerank": config.rag_rerank,
                                       "fusion": config.rag_fusion,
                                       "fusion_vector_weight": config.fusion_vector_weight},
                "env_file": str(config.env_file) if config.env_file else None,
                "embedding_native_dim": native_dim,
            })
            return
        for name, value, source in items:
            self.stdout.write(f"{name} = {value}  ({source})")
        self.stdout.write(f"resolved threshold = {config.threshold:.2f} "
                          f"({config.threshold_origin})")
        self.stdout.write(f"resolved rerank = {config.rag_rerank}, fusion = {config.rag_fusion} "
                          f"(vector weight {config.fusion_vector_weight:.2f})")
        self.stdout.write(f"embedding native dim = {_native_dim_text(native_dim, config)}")


def _native_dim_text(native_dim: int | None, config: Config) -> str:
    if native_dim is None:
        return "unknown (model not found)"
    if native_dim < config.embedding_dim:
        return f"{native_dim} (zero-padded to {config.embedding_dim})"
    return str(native_dim)
