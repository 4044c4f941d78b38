from __future__ import annotations

import dataclasses
import hashlib
import math

import pytest

from core.config import config_load
from core.errors import LocalRagError
from embeddings import (
    ChunkText,
    FakeLexicalEmbedder,
    fake_bucket,
    fake_tokens,
    get_embedder,
)


def _bucket(token: str) -> int:
    digest = hashlib.sha256(("fake-lexical-v1:" + token).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 1024


def _expected(weighted: dict[str, float]) -> list[float]:
    """Hand-computed vector: token -> min(count, 4) * weight, bucketed, then L2-normalised."""
    raw = [0.0] * 1024
    for token, value in weighted.items():
        raw[_bucket(token)] += value
    norm = math.sqrt(sum(value * value for value in raw))
    return [value / norm for value in raw]


def _cosine(left: list[float], right: list[float]) -> float:
    return sum(a * b for a, b in zip(left, right))


@pytest.fixture
def embedder() -> FakeLexicalEmbedder:
    return FakeLexicalEmbedder()


def test_bucket_is_first_8_sha256_bytes_big_endian_mod_1024():
    for token in ("atlas", "crm", "升级", "v2"):
        assert fake_bucket(token) == _bucket(token)


def test_query_atlas_crm_is_two_buckets_of_one_over_root_two(embedder):
    atlas, crm = _bucket("atlas"), _bucket("crm")
    assert atlas != crm
    vector = embedder.embed_query("Atlas CRM")
    assert len(vector) == 1024
    assert vector[atlas] == vector[crm] == 1 / math.sqrt(2)
    assert sum(1 for value in vector if value) == 2


def test_cjk_run_gives_unigrams_and_adjacent_bigrams(embedder):
    assert fake_tokens("升级流程") == ["升", "级", "流", "程", "升级", "级流", "流程"]
    expected = _expected({token: 1.0 for token in ["升", "级", "流", "程", "升级", "级流", "流程"]})
    assert embedder.embed_query("升级流程") == expected


def test_cjk_runs_are_separated_by_other_characters():
    assert fake_tokens("升级 v2 流程") == ["升", "级", "升级", "v2", "流", "程", "流程"]


def test_document_fields_are_weighted(embedder):
    chunk = ChunkText(content="alpha", heading_path=["Beta Zeta"], relative_path="notes/gamma.md",
                      tags=["delta"], wikilinks=["epsilon"])
    expected = _expected({"alpha": 1.0, "beta": 2.0, "zeta": 2.0, "notes": 1.5, "gamma": 1.5,
                          "md": 1.5, "delta": 1.25, "epsilon": 1.25})
    assert embedder.embed_documents([chunk]) == [expected]


def test_same_token_in_two_fields_adds_both_weights(embedder):
    chunk = ChunkText(content="atlas crm", tags=["atlas"])
    assert embedder.embed_documents([chunk]) == [_expected({"atlas": 2.25, "crm": 1.0})]


def test_repeated_token_counts_at_most_four_times(embedder):
    vector = embedder.embed_query("atlas " * 9 + "crm")
    assert vector == _expected({"atlas": 4.0, "crm": 1.0})
    assert vector[_bucket("atlas")] == 4 / math.sqrt(17)


def test_single_character_ascii_tokens_are_dropped(embedder):
    assert fake_tokens("a b c x1 i/o") == ["x1"]
    assert embedder.embed_query("a b c x1") == _expected({"x1": 1.0})


def test_path_separators_dots_underscores_and_dashes_split_tokens():
    assert fake_tokens("Atlas/CRM.sync_job-v2 back\\slash") == [
        "atlas", "crm", "sync", "job", "v2", "back", "slash"]


def test_full_width_letters_are_nfkc_normalised(embedder):
    assert fake_tokens("ＡＢＣ") == ["abc"]
    assert embedder.embed_query("ＡＢＣ") == embedder.embed_query("abc") == _expected({"abc": 1.0})


@pytest.mark.parametrize("text", ["", "   ", "a ! ? -", "é"])
def test_text_without_tokens_is_the_zero_vector(embedder, text):
    assert embedder.embed_query(text) == [0.0] * 1024


def test_empty_chunk_is_the_zero_vector(embedder):
    assert embedder.embed_documents([ChunkText(content="")]) == [[0.0] * 1024]


def test_documents_return_plain_float_lists_in_input_order(embedder):
    vectors = embedder.embed_documents([ChunkText(content="atlas"), ChunkText(content="crm")])
    assert [type(vector) for vector in vectors] == [list, list]
    assert all(type(value) is float for vector in vectors for value in vector)
    assert vectors[0][_bucket("atlas")] == 1.0
    assert vectors[1][_bucket("crm")] == 1.0


def test_overlapping_text_scores_higher_than_unrelated_text(embedder):
    query = embedder.embed_query("How do I upgrade the Atlas CRM database?")
    related, unrelated = embedder.embed_documents([
        ChunkText(content="Upgrade steps for the Atlas CRM database cluster",
                  heading_path=["Atlas CRM", "Upgrade"], relative_path="ops/atlas-crm.md"),
        ChunkText(content="Lunch menu for the team offsite in spring",
                  heading_path=["Offsite"], relative_path="team/offsite.md"),
    ])
    assert _cosine(query, related) > 0.4
    assert _cosine(query, related) > _cosine(query, unrelated)


def test_cjk_query_matches_cjk_document_better_than_unrelated(embedder):
    query = embedder.embed_query("升级流程")
    related, unrelated = embedder.embed_documents([
        ChunkText(content="数据库升级流程说明"), ChunkText(content="团队午餐安排")])
    assert _cosine(query, related) > _cosine(query, unrelated)


def _config(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("")
    return config_load(environ={"EMBEDDING_PROVIDER": "fake"}, start_dir=tmp_path,
                       env_file=env_file)


def test_get_embedder_returns_fake_provider_for_fake_config(tmp_path):
    embedder = get_embedder(config=_config(tmp_path))
    assert isinstance(embedder, FakeLexicalEmbedder)
    assert embedder.embed_query("Atlas CRM")[_bucket("atlas")] == 1 / math.sqrt(2)


def test_get_embedder_rejects_unknown_provider_as_invalid_config(tmp_path):
    config = dataclasses.replace(_config(tmp_path), embedding_provider="nope")
    with pytest.raises(LocalRagError) as raised:
        get_embedder(config=config)
    assert raised.value.code == "invalid_config"
    assert "nope" in raised.value.message
