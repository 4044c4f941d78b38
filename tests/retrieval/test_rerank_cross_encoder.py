"""The cross-encoder reranker on the real runtime, offline, with a tiny random model built here
(a one-layer BERT sequence classifier with one label); its errors without a model or runtime;
and start-up never importing torch for it."""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import string
import subprocess
import sys
from pathlib import Path

import pytest

from core import local_models as model_loader
from retrieval.rerank import RerankCandidate, rerank, rerank_safely, reranker_status
from retrieval.rerank import cross_encoder as cross_encoders
from retrieval.rerank.base import candidate_text
from retrieval.rerank.cross_encoder import RerankModelUnavailable, RerankRuntimeMissing
from tests.conftest import cli_env
from tests.harness import ROOT

RUNTIME = importlib.util.find_spec("sentence_transformers") is not None
needs_runtime = pytest.mark.skipif(not RUNTIME, reason="needs the local-qwen3 runtime "
                                   "(pip install -r requirements-test.txt)")
QUERY = "how do I rotate the vpn certificate"
TEXTS = ["Rotate the VPN certificate yearly.", "The cafeteria opens at 8.",
         "Certificates are signed by the internal CA.", "VPN access needs a ticket.",
         "Expense reports are due monthly."]


def _tiny_cross_encoder(folder: Path) -> Path:
    """A random one-layer BERT with a one-label classification head and a tokenizer that knows
    the words of these tests, saved the way CrossEncoder.save() lays a model out."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True)
    characters = string.ascii_lowercase + string.digits
    known = sorted(set(re.findall(r"[a-z0-9]+", " ".join([QUERY, *TEXTS, "ops notes md"]).lower())))
    vocab = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(characters + string.punctuation)
             + [f"##{char}" for char in characters] + known)
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n")
    torch.manual_seed(11)
    BertForSequenceClassification(BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, num_labels=1, initializer_range=0.2)).save_pretrained(folder)
    # transformers 5 reads the vocabulary from `vocab`, 4.x from `vocab_file`.
    tokenizer = BertTokenizerFast(vocab=str(vocab_file), vocab_file=str(vocab_file))
    assert tokenizer.unk_token_id not in tokenizer(TEXTS[0])["input_ids"]
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory) -> Path:
    if not RUNTIME:
        pytest.skip("needs the local-qwen3 runtime")
    return _tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce") / "model")


@pytest.fixture
def cross_encoder_config(config_override, tiny_cross_encoder):
    return config_override(rag_rerank="cross-encoder", rerank_model=str(tiny_cross_encoder),
                           embedding_device="cpu")


def candidates_of(texts: list[str]) -> list[RerankCandidate]:
    return [RerankCandidate(chunk_id=rank, content=text, heading_path=("Ops",),
                            relative_path="ops/notes.md", fused_rank=rank)
            for rank, text in enumerate(texts, start=1)]


def model_scores(folder: Path, texts: list[str]) -> list[float]:
    """The model's own scores, from a copy loaded here, outside the reranker."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(folder), device="cpu", local_files_only=True)
    pairs = [(QUERY, candidate_text(candidate)) for candidate in candidates_of(texts)]
    return [float(score) for score in model.predict(pairs)]


# --- with the runtime -------------------------------------------------------------------------



@pytest.mark.local_model
@needs_runtime
def test_scores_are_the_models_and_the_order_follows_them(cross_encoder_config,
                                                          tiny_cross_encoder):
    scores = model_scores(tiny_cross_encoder, TEXTS)
    assert len(set(scores)) == len(scores)
    # Fused worst-first by the model, so the rerank has to turn the order round.
    texts = [text for _, text in sorted(zip(scores, TEXTS, strict=True))]
    ranked = rerank(query=QUERY, candidates=candidates_of(texts),
                    config=cross_encoder_config)
    assert [item.candidate.content for item in ranked] == texts[::-1]
    expected = dict(zip(TEXTS, scores, strict=True))
    for item in ranked:
        assert item.score == pytest.approx(expected[item.candidate.content], abs=1e-6)
        assert 0.0 < item.score < 1.0  # the sigmoid of a one-label head


@pytest.mark.local_model
@needs_runtime
def test_model_is_loaded_once_per_process(cross_encoder_config, monkeypatch):
    reads = []
    original = model_loader._model_read
    monkeypatch.setattr(model_loader, "_models", {})
    monkeypatch.setattr(model_loader, "_model_read",
                        lambda **kwargs: reads.append(kwargs) or original(**kwargs))
    first = rerank(query=QUERY, candidates=candidates_of(TEXTS), config=cross_encoder_config)
    second = rerank(query=QUERY, candidates=candidates_of(TEXTS), config=cross_encoder_config)
    assert first == second
    assert len(reads) == 1


@pytest.mark.local_model
@needs_runtime
def test_loading_and_scoring_open_no_network_connection(cross_encoder_config,
                                                        monkeypatch):
    attempts = []
    original = socket.socket.connect

    def guarded(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError("network access during an offline load")
        return original(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(model_loader, "_models", {})
    ranked = rerank(query=QUERY, candidates=candidates_of(TEXTS), config=cross_encoder_config)
    assert len(ranked) == len(TEXTS) and attempts == []


@pytest.mark.local_model
@needs_runtime
def test_unloadable_folder_is_model_unavailable_naming_it(config_override, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (folder / "model.safetensors").write_bytes(b"not really weights")
    config = config_override(rag_rerank="cross-encoder", rerank_model=str(folder))
    with pytest.raises(RerankModelUnavailable) as caught:
        rerank(query=QUERY, candidates=candidates_of(TEXTS), config=config)
    assert "could not load the rerank model from" in caught.value.message
    assert caught.value.details["folder"] == str(folder)


@pytest.mark.local_model
@needs_runtime
def test_status_is_ok_with_the_model_in_place(cross_encoder_config):
    assert reranker_status(config=cross_encoder_config) == "ok"


# --- without a model or the runtime -----------------------------------------------------------


@pytest.fixture
def runtime_present(monkeypatch):
    """Pretend sentence-transformers, transformers and torch are installed (nothing loads)."""
    monkeypatch.setattr(cross_encoders, "runtime_missing", lambda: [])


@pytest.fixture
def runtime_absent(monkeypatch):
    """Make the runtime unimportable, as on a default install."""
    for name in ("sentence_transformers", "transformers", "torch"):
        monkeypatch.setitem(sys.modules, name, None)


def test_missing_folder_is_model_unavailable_naming_it(config_override, tmp_path,
                                                       runtime_present):
    config = config_override(rag_rerank="cross-encoder", rerank_model=str(tmp_path / "absent"))
    with pytest.raises(RerankModelUnavailable) as caught:
        rerank(query=QUERY, candidates=candidates_of(TEXTS), config=config)
    assert str(tmp_path / "absent") in caught.value.message
    assert caught.value.details == {"folder": str(tmp_path / "absent"),
                                    "variable": "RERANK_MODEL"}
    assert caught.value.http_status == 503
    assert reranker_status(config=config) == "model_not_found"


def test_relative_folder_is_resolved_against_the_project_root(config_override):
    config = config_override(rag_rerank="cross-encoder", rerank_model="models/reranker")
    assert cross_encoders.rerank_model_folder(config=config) == (
        config.project_root / "models" / "reranker")


def test_absent_runtime_is_runtime_missing_with_the_install_hint(config_override, tmp_path,
                                                                 runtime_absent):
    config = config_override(rag_rerank="cross-encoder", rerank_model=str(tmp_path))
    with pytest.raises(RerankRuntimeMissing) as caught:
        rerank(query=QUERY, candidates=candidates_of(TEXTS), config=config)
    assert caught.value.code == "rerank_runtime_missing"
    assert 'pip install -e ".[local-qwen3]"' in caught.value.message
    assert caught.value.details["missing"] == ["sentence_transformers", "transformers", "torch"]
    assert reranker_status(config=config) == "runtime_missing"


def test_missing_model_falls_back_to_the_fused_order(config_override, tmp_path,
                                                     runtime_present):
    config = config_override(rag_rerank="cross-encoder", rerank_model=str(tmp_path / "absent"))
    candidates = candidates_of(TEXTS)
    outcome = rerank_safely(query=QUERY, candidates=candidates[::-1], config=config)
    assert [item.candidate for item in outcome.ranked] == candidates
    assert outcome.failure is not None and outcome.failure.code == "rerank_model_unavailable"
    assert not outcome.applied


# --- start-up stays light ---------------------------------------------------------------------

LAZY_SCRIPT = """
import dataclasses, json, sys
import django
django.setup()
from core.config import get_config
from retrieval.rerank import RerankCandidate, RERANKERS, rerank, rerank_safely, reranker_status

config = get_config()
candidates = [RerankCandidate(chunk_id=1, content="rotate the certificate", heading_path=(),
                              relative_path="a.md", fused_rank=1)]
ranked = rerank(query="rotate", candidates=candidates,
                config=dataclasses.replace(config, rag_rerank="features"))
states = [reranker_status(config=dataclasses.replace(config, rag_rerank=name,
                                                     rerank_model="/nonexistent/model"))
          for name in RERANKERS]
outcome = rerank_safely(query="rotate", candidates=candidates,
                        config=dataclasses.replace(config, rag_rerank="cross-encoder",
                                                   rerank_model="/nonexistent/model"))
heavy = [name for name in ("torch", "transformers", "sentence_transformers")
         if sys.modules.get(name) is not None]
print(json.dumps({"ranked": len(ranked), "states": states, "failure": outcome.failure.code,
                  "heavy": heavy}))
"""


def test_startup_and_rerank_status_import_no_model_runtime():
    env = cli_env(DJANGO_SETTINGS_MODULE="localrag_site.settings")
    result = subprocess.run([sys.executable, "-c", LAZY_SCRIPT], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["ranked"] == 1
    assert report["states"][2] in ("model_not_found", "runtime_missing")
    assert report["failure"] in ("rerank_model_unavailable", "rerank_runtime_missing")
    assert report["heavy"] == []
