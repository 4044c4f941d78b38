"""`rag embeddings warmup` — download (first time only) and load the local embedding model."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from core.config import get_config
from embeddings import provider_spec
from embeddings.local import model_warmup


class Command(RagCommand):
    help = ("Local embedding model: `warmup` downloads it into EMBEDDING_CACHE_DIR when missing "
            "(the only step that uses the network), loads it and measures one query and a batch "
            "of passages.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["warmup"])

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        config = get_config()
        if not provider_spec(config=config).loads_model:
            self.stdout.write(f"EMBEDDING_PROVIDER={config.embedding_provider} needs no model "
                              f"({config.embedding_model}: {config.embedding_dim} dimensions, "
                              "native and stored); nothing to warm up")
            return
        report = model_warmup(config=config)
        label = "local custom model" if report.provider == "sentence-transformers" else "model"
        padded = (f" (zero-padded to {report.dim})" if report.native_dim < report.dim else "")
        self.stdout.write(
            f"{label} {report.model} ({report.provider}) ready: {report.folder}"
            f"{' (downloaded now)' if report.downloaded else ''}\n"
            f"dimension: native {report.native_dim}, stored {report.dim}{padded}\n"
            f"device: {report.device}\n"
            f"load time: {report.load_seconds:.2f}s\n"
            f"query: {report.query_seconds * 1000:.0f} ms\n"
            f"throughput: {report.passages_per_second:.1f} passages/s "
            f"({report.passages} passages in {report.passages_seconds:.2f}s, "
            f"batch size {config.embedding_batch_size})")
