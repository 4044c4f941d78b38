"""One loader for the sentence-transformers models run in this process: the local embedders
(embeddings/local.py) and the cross-encoder reranker (retrieval/rerank/cross_encoder.py).

`torch` and `sentence_transformers` are imported when a model is first loaded, never before, so
/health, `rag config` and the fake provider stay light. A model is read from disk once per
process and folder and device; while it loads, the Hugging Face libraries may not reach the
network.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from core.errors import LocalRagError

RUNTIME_MODULES = ("sentence_transformers", "transformers", "torch")
INSTALL_HINT = ('pip install -e ".[local-qwen3]" (or pip install -r requirements-local-qwen3.txt); '
                "on CPU-only Linux install the CPU build of torch first, e.g. pip install "
                "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu, which avoids "
                "the multi-GB CUDA build")
INSTALL_DETAILS = {"install": 'pip install -e ".[local-qwen3]"'}
# Read by huggingface_hub / transformers when they are first imported (during the first load).
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
# Read once by libgomp, the OpenMP runtime of torch's Linux wheels, when torch is first
# imported. By default a waiting thread spins about 300,000 rounds (milliseconds) before it
# sleeps: on 2 cores shared with PostgreSQL and other processes the spinning thread holds the
# core the other one needs. A tenth of that still covers the gaps between the operators of one
# forward pass, so an idle machine and a single query lose nothing, while OMP_WAIT_POLICY=PASSIVE
# (sleep at once) cost a query half again its time (docs/benchmarks.md).
_OPENMP_SPINCOUNT = "30000"

logger = logging.getLogger("localrag.models")

ModelKind = Literal["SentenceTransformer", "CrossEncoder"]

_models: dict[tuple[str, str, str], Any] = {}
_models_lock = threading.Lock()


def runtime_missing() -> list[str]:
    """The runtime modules that are not installed (found without importing them)."""
    return [name for name in RUNTIME_MODULES if importlib.util.find_spec(name) is None]


def sentence_transformers_load(*, kind: ModelKind, folder: Path, device: str,
                               runtime_error: type[LocalRagError],
                               unavailable_error: type[LocalRagError], what: str) -> Any:
    """The `kind` model of `folder` on `device`, read from disk once per process. A runtime that
    cannot be imported raises `runtime_error`, a model that does not load `unavailable_error`
    (its message names `what`, e.g. "the embedding model")."""
    key = (kind, str(folder), device)
    # One lock for all: a second request waits for the load in progress instead of repeating it.
    with _models_lock:
        if key not in _models:
            _models[key] = _model_read(kind=kind, folder=folder, device=device,
                                       runtime_error=runtime_error,
                                       unavailable_error=unavailable_error, what=what)
            logger.info("%s loaded from %s on %s", what, folder, device)
        return _models[key]


def _model_read(*, kind: ModelKind, folder: Path, device: str,
                runtime_error: type[LocalRagError], unavailable_error: type[LocalRagError],
                what: str) -> Any:
    # Whoever set either variable has chosen how OpenMP waits.
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = _OPENMP_SPINCOUNT
    with hub_offline():
        try:
            import sentence_transformers
        except ImportError as exc:
            raise runtime_error(
                f"sentence-transformers is installed but cannot be imported ({exc}); reinstall "
                f"it with {INSTALL_HINT}", details=dict(INSTALL_DETAILS)) from exc
        from transformers.utils import logging as transformers_logging

        # Its per-file "Loading weights" bar is noise in server logs and CLI output.
        transformers_logging.disable_progress_bar()
        model_class = getattr(sentence_transformers, kind)
        try:
            return model_class(str(folder), device=device, local_files_only=True)
        # Loading fails in many library-specific ways (bad files, a device torch lacks, ...);
        # each is the same domain problem here.
        except Exception as exc:
            raise unavailable_error(
                f"could not load {what} from {folder} on {device}: {type(exc).__name__}: {exc}",
                details={"folder": str(folder), "device": device}) from exc


@contextmanager
def hub_offline() -> Iterator[None]:
    """Forbid the Hugging Face libraries any network access while a model loads."""
    previous = {name: os.environ.get(name) for name in _OFFLINE_ENV}
    os.environ.update(_OFFLINE_ENV)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
