"""`rag config [--json]` — the resolved configuration, never the API key's value;
`rag config --create-env NAME=VALUE...` — a first `.env` from `.env.sample`, an existing one left
as it is."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import Config, get_config
from core.errors import InvalidRequest
from embeddings.providers import embedding_native_dim
from ops.env_file import env_file_create
from ops.settings_audit import NOT_RECORDED, settings_change_audit


class Command(RagCommand):
    help = "Print the resolved configuration: NAME = value (source)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print as JSON")
        parser.add_argument("--create-env", nargs="+", metavar="NAME=VALUE",
                            help="make .env from .env.sample with these settings, unless it "
                                 "exists (then it is left as it is)")

    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()
        if options["create_env"]:
            self._create_env(config, options["create_env"])
            return
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


    def _create_env(self, config: Config, assignments: list[str]) -> None:
        values = dict(_assignment(text) for text in assignments)
        created = env_file_create(config=config, values=values)
        settings = ", ".join(f"{name}={value}" for name, value in values.items())
        if created is not None:
            self.stdout.write(f"created {created} from .env.sample with {settings} (mode 600)")
            if not settings_change_audit(env_file=created, values=values):
                self.stderr.write(f"note: {NOT_RECORDED}")
        elif config.env_file is not None:
            self.stdout.write(f"{config.env_file} exists; left as it is")


def _assignment(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise InvalidRequest(f"--create-env takes NAME=VALUE, not {text!r}")
    return name.strip(), value.strip()


def _native_dim_text(native_dim: int | None, config: Config) -> str:
    if native_dim is None:
        return "unknown (model not found)"
    if native_dim < config.embedding_dim:
        return f"{native_dim} (zero-padded to {config.embedding_dim})"
    return str(native_dim)
