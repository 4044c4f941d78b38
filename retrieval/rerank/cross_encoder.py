"""The `cross-encoder` reranker: a sentence-transformers CrossEncoder from a local folder.

RERANK_MODEL names the folder (absolute, or relative to the project root): a Hugging Face
sequence-classification model with one output (config.json, weights, tokenizer), as
`CrossEncoder.save()` writes it. Nothing is ever downloaded. `torch` and
`sentence_transformers` are imported when the model is first loaded, never before; the model is
loaded once per process and runs on EMBEDDING_DEVICE.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import LocalRagError
from core.local_models import (
    INSTALL_DETAILS,
    INSTALL_HINT,
    runtime_missing,
    sentence_transformers_load,
)
from retrieval.rerank.base import (
    RerankCandidate,
    RerankedCandidate,
    candidate_text,
    ranked_by_score,
)

if TYPE_CHECKING:
    from core.config import Config

logger = logging.getLogger("localrag.rerank")

PREDICT_BATCH_SIZE = 16
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")


class RerankModelUnavailable(LocalRagError):
    code = "rerank_model_unavailable"


class RerankRuntimeMissing(LocalRagError):
    code = "rerank_runtime_missing"


def rerank_model_folder(*, config: Config) -> Path:
    """The folder RERANK_MODEL names, resolved against the project root."""
    path = Path(config.rerank_model).expanduser()
    return path if path.is_absolute() else (config.project_root or Path.cwd()) / path


def rerank_model_complete(folder: Path) -> bool:
    """config.json and weights: what a CrossEncoder folder has on disk."""
    return (folder / "config.json").is_file() and any(
        (folder / name).is_file() for name in _WEIGHT_FILES)


def cross_encoder_status(*, config: Config) -> str:
    """`ok`, `runtime_missing` or `model_not_found`; reads files, loads nothing."""
    if runtime_missing():
        return "runtime_missing"
    return "ok" if rerank_model_complete(rerank_model_folder(config=config)) else "model_not_found"


class CrossEncoderReranker:
    """Scores each (query, chunk) pair with the model; higher is better."""

    name = "cross-encoder"

    def __init__(self, *, model: Any, folder: Path) -> None:
        self.folder = folder
        self._model = model

    def rerank(self, *, query: str,
               candidates: Sequence[RerankCandidate]) -> list[RerankedCandidate]:
        """Every candidate, best model score first."""
        if not candidates:
            return []
        pairs = [(query, candidate_text(candidate)) for candidate in candidates]
        try:
            scores = self._model.predict(pairs, batch_size=PREDICT_BATCH_SIZE,
                                         show_progress_bar=False, convert_to_numpy=True)
        # Inference fails in library-specific ways (out of memory, a broken tokenizer, ...);
        # each means the model cannot rerank now.
        except Exception as exc:
            logger.warning("cross-encoder %s failed to score: %s", self.folder,
                           type(exc).__name__)
            raise RerankModelUnavailable(
                f"the rerank model in {self.folder} could not score the candidates: "
                f"{type(exc).__name__}: {exc}", details={"folder": str(self.folder)}) from exc
        return ranked_by_score([RerankedCandidate(candidate=candidate, score=float(score))
                                for candidate, score in zip(candidates, scores, strict=True)])


def cross_encoder_reranker(*, config: Config) -> CrossEncoderReranker:
    """The model in RERANK_MODEL, loaded on first use in this process and reused after."""
    missing = runtime_missing()
    if missing:
        raise RerankRuntimeMissing(
            f"RAG_RERANK=cross-encoder runs the model in this process and needs "
            f"sentence-transformers, transformers and torch ({', '.join(missing)} not "
            f"installed); install them with {INSTALL_HINT}",
            details={"missing": missing, **INSTALL_DETAILS})
    folder = rerank_model_folder(config=config)
    if not rerank_model_complete(folder):
        raise RerankModelUnavailable(
            f"RERANK_MODEL={config.rerank_model!r}: {folder} is not a cross-encoder model folder "
            "(config.json and model weights); it is never downloaded, put the model there",
            details={"folder": str(folder), "variable": "RERANK_MODEL"})
    return CrossEncoderReranker(model=cross_encoder_load(folder=folder,
                                                         device=config.embedding_device),
                                folder=folder)


def cross_encoder_load(*, folder: Path, device: str) -> Any:
    """The CrossEncoder for `folder` on `device`, read from disk once per process."""
    return sentence_transformers_load(kind="CrossEncoder", folder=folder, device=device,
                                      runtime_error=RerankRuntimeMissing,
                                      unavailable_error=RerankModelUnavailable,
                                      what="the rerank model")
