"""What a run records so that it can be reproduced and compared: the configuration's hash and
every retrieval parameter, the prompt version, the code version and a digest of the corpus;
and the leakage guard, which names questions whose text the evaluated bases hold verbatim."""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from access.callers import Scope
from answering.prompts import PROMPT_VERSION
from core.config import Config
from evaluation.ablation import config_hash
from evaluation.corpus import ANCHOR_CHARS, corpus_digest, text_normalised, verbatim_places
from evaluation.questions import Question

logger = logging.getLogger("localrag.evaluation")

CODE_ROOT = Path(__file__).resolve().parent.parent
GIT_TIMEOUT_SECONDS = 2.0
PACKAGE_NAME = "local-rag"
# Shorter texts ("What is X?") are found in any corpus by chance, not copied into it.
LEAKAGE_MIN_CHARS = ANCHOR_CHARS
# Fields of a question that the leakage guard looks for; answer_contains spans are quotes of
# the expected source by definition, so finding them there is the point, not a leak.
LEAKAGE_FIELDS = ("question", "reference_answer")
# Settings beside RAG_* that change what retrieval and answering do, recorded with every run.
RECORDED_SETTINGS = (
    "embedding_provider", "embedding_model", "rag_retrieval", "rag_candidates", "rag_rerank",
    "rerank_model", "rag_vector_index", "hnsw_ef_search", "rag_min_similarity", "rag_refusal",
    "llm_provider", "llm_model")


@dataclass(frozen=True)
class RunRecord:
    config_hash: str
    prompt_version: str
    code_version: str
    corpus_digest: str
    documents: int
    settings: dict[str, Any]


@functools.cache
def code_version() -> str:
    """The git commit of the running code when it is a git checkout, else the installed
    package's version; read once per process, since the code loaded does not change."""
    git = shutil.which("git")
    if git is not None and (CODE_ROOT / ".git").exists():
        try:
            result = subprocess.run([git, "rev-parse", "HEAD"], cwd=CODE_ROOT,
                                    capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS,
                                    stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.SubprocessError):
            result = None
        commit = result.stdout.strip() if result is not None and result.returncode == 0 else ""
        if len(commit) == 40:
            return f"git:{commit}"
    try:
        return f"{PACKAGE_NAME}=={importlib.metadata.version(PACKAGE_NAME)}"
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def run_record(*, config: Config, scope: Scope) -> RunRecord:
    """What this run is made of, taken when it starts."""
    digest = corpus_digest(scope=scope)
    settings = {name: getattr(config, name, None) for name in RECORDED_SETTINGS}
    settings["threshold"] = config.threshold
    return RunRecord(config_hash=config_hash(config=config), prompt_version=PROMPT_VERSION,
                     code_version=code_version(), corpus_digest=digest.digest,
                     documents=digest.documents, settings=settings)


def leakage_find(*, questions: list[Question], scope: Scope) -> list[dict[str, Any]]:
    """Each question (and reference answer) whose text a chunk of the scope's bases holds
    verbatim, case and whitespace aside: {question_id, field, document, chunk_index}."""
    asked: list[tuple[str, str, str]] = []
    for question in questions:
        for name in LEAKAGE_FIELDS:
            text = getattr(question, name)
            if len(text_normalised(text)) >= LEAKAGE_MIN_CHARS:
                asked.append((question.id, name, text))
    places = verbatim_places(scope=scope, texts=[text for _, _, text in asked])
    return [{"question_id": asked[place.text_index][0], "field": asked[place.text_index][1],
             "document": place.document, "chunk_index": place.chunk_index}
            for place in places]


def leakage_log(*, run_id: int, leakage: list[dict[str, Any]]) -> None:
    if leakage:
        questions = sorted({entry["question_id"] for entry in leakage})
        logger.warning("evaluation run %s: %d question(s) appear verbatim in the evaluated "
                       "knowledge bases: %s", run_id, len(questions), ", ".join(questions[:20]))
