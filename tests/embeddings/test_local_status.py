"""Local model providers without the runtime: locating models, /health states, native dims and
the errors that stop ingest and search before any work (no torch needed for any of these)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from django.test import Client

from core.config import ConfigError, config_load
from core.errors import LocalRagError
from core.local_models import RUNTIME_MODULES
from embeddings import embedder_status, get_embedder
from embeddings import local as local_models

QWEN = "Qwen/Qwen3-Embedding-0.6B"
REVISION = "0123456789abcdef0123456789abcdef01234567"


def _config(tmp_path: Path, **environ: str):
    env_file = tmp_path / "empty.env"
    env_file.write_text("")
    return config_load(environ=environ, start_dir=tmp_path, env_file=env_file)


def _model_files(folder: Path, *, pooling: dict, hidden: int = 384, dense: int | None = None,
                 weights: bool = True) -> Path:
    """A sentence-transformers folder as far as the files on disk go (the weights are dummies)."""
    modules = [{"idx": 0, "name": "0", "path": "",
                "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}]
    if dense:
        modules.append({"idx": 2, "name": "2", "path": "2_Dense",
                        "type": "sentence_transformers.models.Dense"})
        (folder / "2_Dense").mkdir(parents=True)
        (folder / "2_Dense" / "config.json").write_text(json.dumps(
            {"in_features": hidden, "out_features": dense}))
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": hidden}))
    if weights:
        (folder / "model.safetensors").write_bytes(b"not really weights")
    return folder


def _qwen_cache(cache: Path, **kwargs) -> Path:
    repo = cache / "models--Qwen--Qwen3-Embedding-0.6B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(REVISION)
    return _model_files(repo / "snapshots" / REVISION,
                        pooling={"embedding_dimension": 1024, "pooling_mode": "lasttoken"},
                        hidden=1024, **kwargs)


@pytest.fixture
def runtime_present(monkeypatch):
    """Pretend sentence-transformers, transformers and torch are installed (nothing loads)."""
    monkeypatch.setattr(local_models, "runtime_missing", lambda: [])


@pytest.fixture
def runtime_absent(monkeypatch):
    """Make the runtime unimportable, as on a default install."""
    for name in RUNTIME_MODULES:
        monkeypatch.setitem(sys.modules, name, None)


def test_qwen_counts_as_cached_only_with_a_complete_hub_snapshot(tmp_path):
    folder = _qwen_cache(tmp_path / "cache")
    assert local_models.hub_snapshot(cache_dir=tmp_path / "cache", repo_id=QWEN) == folder
    (folder / "model.safetensors").unlink()
    assert local_models.hub_snapshot(cache_dir=tmp_path / "cache", repo_id=QWEN) is None
    assert local_models.hub_snapshot(cache_dir=tmp_path / "elsewhere", repo_id=QWEN) is None


def test_embedder_status_names_each_state_without_loading(tmp_path, runtime_present):
    qwen = _config(tmp_path, EMBEDDING_PROVIDER="local-qwen3",
                   EMBEDDING_CACHE_DIR=str(tmp_path / "cache"))
    assert embedder_status(config=_config(tmp_path)) == "ok"
    assert embedder_status(config=qwen) == "model_not_cached"
    _qwen_cache(tmp_path / "cache")
    assert embedder_status(config=qwen) == "ok"
    missing = _config(tmp_path, EMBEDDING_PROVIDER="sentence-transformers",
                      EMBEDDING_MODEL=str(tmp_path / "no-such-model"))
    assert embedder_status(config=missing) == "model_not_found"


def test_status_is_runtime_missing_when_torch_is_not_installed(tmp_path, runtime_absent):
    _qwen_cache(tmp_path / "cache")
    qwen = _config(tmp_path, EMBEDDING_PROVIDER="local-qwen3",
                   EMBEDDING_CACHE_DIR=str(tmp_path / "cache"))
    assert embedder_status(config=qwen) == "runtime_missing"


def test_missing_runtime_error_names_the_install_commands(tmp_path, runtime_absent):
    qwen = _config(tmp_path, EMBEDDING_PROVIDER="local-qwen3")
    with pytest.raises(LocalRagError) as raised:
        get_embedder(config=qwen)
    error = raised.value
    assert (error.code, error.http_status, error.exit_code) == ("embedding_runtime_missing", 503, 3)
    for fragment in ('pip install -e ".[local-qwen3]"', "torch==2.13.0",
                     "pip install -r requirements-local-qwen3.txt"):
        assert fragment in error.message


def test_uncached_qwen_error_names_cache_size_and_warmup(tmp_path, runtime_present):
    cache = tmp_path / "empty-cache"
    qwen = _config(tmp_path, EMBEDDING_PROVIDER="local-qwen3", EMBEDDING_CACHE_DIR=str(cache))
    with pytest.raises(LocalRagError) as raised:
        get_embedder(config=qwen)
    error = raised.value
    assert (error.code, error.http_status, error.exit_code) == (
        "embedding_model_unavailable", 503, 3)
    for fragment in (str(cache), "1.2 GB", "1.5 GB", "rag embeddings warmup"):
        assert fragment in error.message
    assert error.details["cache_dir"] == str(cache)


def test_custom_model_is_found_by_path_package_or_import_name(tmp_path, monkeypatch):
    site = tmp_path / "site"
    folder = _model_files(site / "acme_minilm_model" / "model",
                          pooling={"embedding_dimension": 384, "pooling_mode": "mean"})
    (site / "acme_minilm_model" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    for name in ("acme-minilm-model", "acme_minilm_model", str(folder),
                 str(site / "acme_minilm_model")):
        assert local_models.custom_model_folder(model=name, base=tmp_path) == folder, name
    assert local_models.custom_model_folder(model="site/acme_minilm_model/model",
                                            base=tmp_path) == folder
    assert local_models.custom_model_folder(model="no-such-package", base=tmp_path) is None


@pytest.mark.parametrize("pooling, dense, expected", [
    ({"embedding_dimension": 384, "pooling_mode": "mean"}, None, 384),
    ({"embedding_dimension": 384, "pooling_mode": ["mean", "max"]}, None, 768),
    ({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True,
      "pooling_mode_cls_token": True}, None, 768),
    ({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}, 256, 256),
])
def test_native_dim_is_read_from_the_module_configs(tmp_path, pooling, dense, expected):
    folder = _model_files(tmp_path / "model", pooling=pooling, dense=dense)
    assert local_models.model_folder_dimension(folder) == expected


def test_health_reports_the_local_model_state_and_native_dim(tmp_path, db, config_override,
                                                             runtime_present):
    folder = _model_files(tmp_path / "model",
                          pooling={"embedding_dimension": 384, "pooling_mode": "mean"})
    config_override(embedding_provider="sentence-transformers", embedding_model=str(folder))
    body = json.loads(Client().get("/health").content)
    assert body["checks"]["embedding_config"] == "ok"
    assert body["details"]["embedding_native_dim"] == 384
    config_override(embedding_provider="local-qwen3", embedding_model=QWEN,
                    embedding_cache_dir=tmp_path / "empty-cache")
    body = json.loads(Client().get("/health").content)
    assert (body["status"], body["checks"]["embedding_config"]) == ("degraded", "model_not_cached")
    assert body["details"]["embedding_native_dim"] == 1024


def test_search_with_an_uncached_model_is_503_before_any_work(tmp_path, db, config_override,
                                                               runtime_present):
    config_override(embedding_provider="local-qwen3", embedding_model=QWEN,
                    embedding_cache_dir=tmp_path / "empty-cache")
    response = Client().post("/search", data=json.dumps({"query": "Atlas"}),
                             content_type="application/json")
    assert response.status_code == 503
    error = json.loads(response.content)["error"]
    assert error["code"] == "embedding_model_unavailable"
    assert error["details"]["command"] == "rag embeddings warmup"


@pytest.mark.parametrize("value, accepted", [("16", 16), ("1", 1), ("0", None), ("-2", None),
                                             ("many", None)])
def test_embedding_batch_size_must_be_a_positive_integer(tmp_path, value, accepted):
    if accepted is not None:
        assert _config(tmp_path, EMBEDDING_BATCH_SIZE=value).embedding_batch_size == accepted
        return
    with pytest.raises(ConfigError) as raised:
        _config(tmp_path, EMBEDDING_BATCH_SIZE=value)
    assert raised.value.variable == "EMBEDDING_BATCH_SIZE"


def test_embedding_batch_size_defaults_to_16(tmp_path):
    assert _config(tmp_path).embedding_batch_size == 16
