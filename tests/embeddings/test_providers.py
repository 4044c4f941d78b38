"""The one provider table: every reader sees a row added to it, and only what it says."""

from __future__ import annotations

import dataclasses

import pytest

from core.config import ConfigError, config_load
from core.embedding_providers import EMBEDDING_PROVIDERS
from embeddings import (
    PROVIDERS,
    FakeLexicalEmbedder,
    ProviderSpec,
    embedder_status,
    embedding_native_dim,
    get_embedder,
)
from ops.serving import serve_workers


class _Marked(FakeLexicalEmbedder):
    provider = "marked"


@pytest.fixture
def extra_provider(monkeypatch):
    spec = ProviderSpec(name="marked", fixed_model="marked-v1", default_threshold=0.42,
                        loads_model=True, build=lambda *, config: _Marked(),
                        check=lambda *, config: "model_not_cached")
    monkeypatch.setitem(PROVIDERS, "marked", spec)
    monkeypatch.setitem(EMBEDDING_PROVIDERS, "marked", spec)
    return spec


def _config(tmp_path, **environ):
    env_file = tmp_path / "empty.env"
    env_file.write_text("")
    return config_load(environ=environ, start_dir=tmp_path, env_file=env_file)


def test_a_row_added_to_the_table_is_seen_by_every_reader(tmp_path, extra_provider):
    config = _config(tmp_path, EMBEDDING_PROVIDER="marked")
    assert config.embedding_model == "marked-v1"  # its fixed model, resolved by validation
    assert (config.threshold, config.threshold_origin) == (0.42, "marked default")
    assert isinstance(get_embedder(config=config), _Marked)
    assert embedder_status(config=config) == "model_not_cached"
    assert embedding_native_dim(config=config) == 1024
    assert serve_workers(config=config) == 1


def test_config_refuses_a_provider_missing_from_the_table(tmp_path):
    with pytest.raises(ConfigError) as raised:
        _config(tmp_path, EMBEDDING_PROVIDER="marked")
    assert raised.value.variable == "EMBEDDING_PROVIDER"
    assert ", ".join(PROVIDERS) in raised.value.message


def test_config_refuses_another_model_for_a_fixed_model_provider(tmp_path, extra_provider):
    with pytest.raises(ConfigError, match="its fixed model is 'marked-v1'"):
        _config(tmp_path, EMBEDDING_PROVIDER="marked", EMBEDDING_MODEL="other")


def test_fake_serves_with_two_workers_and_local_models_with_one(tmp_path):
    fake = _config(tmp_path)
    assert serve_workers(config=fake) == 2
    assert serve_workers(config=dataclasses.replace(fake, embedding_provider="local-qwen3")) == 1
