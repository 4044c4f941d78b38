"""Configuration: precedence, empty-as-unset, discovery, validation and safe display."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import ConfigError, config_load


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / ".env.sample").write_text("")
    return tmp_path


def write_env(project: Path, **values: str) -> None:
    (project / ".env").write_text("".join(f"{k}={v}\n" for k, v in values.items()))


def test_os_env_beats_dotenv_beats_default(project: Path):
    write_env(project, RAG_TOP_K="7", LLM_TIMEOUT_SECONDS="12")
    config = config_load(environ={"RAG_TOP_K": "9"}, start_dir=project)
    assert config.rag_top_k == 9 and config.sources["RAG_TOP_K"] == "env"
    assert config.llm_timeout_seconds == 12 and config.sources["LLM_TIMEOUT_SECONDS"] == ".env"
    assert config.rag_context_token_budget == 10000 and config.rag_context_neighbours == 1
    assert config.sources["RAG_CONTEXT_TOKEN_BUDGET"] == "default"


def test_empty_os_variable_does_not_hide_dotenv_value(project: Path):
    write_env(project, RAG_TOP_K="7")
    config = config_load(environ={"RAG_TOP_K": ""}, start_dir=project)
    assert config.rag_top_k == 7
    assert config.sources["RAG_TOP_K"] == ".env"


def test_empty_dotenv_value_falls_back_to_default(project: Path):
    write_env(project, RAG_TOP_K="", LLM_PROVIDER="")
    config = config_load(environ={}, start_dir=project)
    assert config.rag_top_k == 5 and config.llm_provider == "fake"
    assert config.sources["RAG_TOP_K"] == "default"


def test_dotenv_is_found_from_a_subdirectory(project: Path):
    write_env(project, RAG_TOP_K="11")
    nested = project / "a" / "b"
    nested.mkdir(parents=True)
    config = config_load(environ={}, start_dir=nested)
    assert config.rag_top_k == 11
    assert config.project_root == project
    assert config.env_file == project / ".env"


def test_explicit_env_file_overrides_discovery(project: Path, tmp_path_factory):
    write_env(project, RAG_TOP_K="11")
    other = tmp_path_factory.mktemp("elsewhere") / "custom.env"
    other.write_text("RAG_TOP_K=3\n")
    config = config_load(environ={}, start_dir=project, env_file=other)
    assert config.rag_top_k == 3 and config.env_file == other


def test_missing_explicit_env_file_is_an_error(project: Path):
    with pytest.raises(ConfigError) as err:
        config_load(environ={}, start_dir=project, env_file=project / "nope.env")
    assert err.value.variable == "--env-file"


def test_code_defaults_leave_llm_model_url_and_key_empty(project: Path):
    config = config_load(environ={}, start_dir=project)
    assert (config.llm_model, config.llm_base_url, config.llm_api_key) == ("", "", "")
    assert config.embedding_model == "fake-lexical-v1"


@pytest.mark.parametrize(
    ("variable", "value", "fragment"),
    [
        ("EMBEDDING_DIM", "768", "EMBEDDING_DIM"),
        ("EMBEDDING_DIM", "abc", "EMBEDDING_DIM"),
        ("EMBEDDING_PROVIDER", "openai", "EMBEDDING_PROVIDER"),
        ("EMBEDDING_MODEL", "BAAI/bge-m3", "EMBEDDING_MODEL"),
        ("LLM_PROVIDER", "kimi", "LLM_PROVIDER"),
        ("LLM_TIMEOUT_SECONDS", "soon", "LLM_TIMEOUT_SECONDS"),
        ("RAG_TOP_K", "0", "RAG_TOP_K"),
        ("RAG_TOP_K", "21", "RAG_TOP_K"),
        ("RAG_TOP_K", "five", "RAG_TOP_K"),
        ("RAG_MIN_SIMILARITY", "high", "RAG_MIN_SIMILARITY"),
        ("RAG_CONTEXT_TOKEN_BUDGET", "1.5", "RAG_CONTEXT_TOKEN_BUDGET"),
        ("RAG_FALLBACK_ENABLED", "maybe", "RAG_FALLBACK_ENABLED"),
        ("EMBEDDING_DEVICE", "tpu", "EMBEDDING_DEVICE"),
        ("LLM_TIMEOUT_SECONDS", "nan", "LLM_TIMEOUT_SECONDS"),
        ("LLM_TIMEOUT_SECONDS", "0", "LLM_TIMEOUT_SECONDS"),
        ("DATABASE_URL", "postgresql://u@localhost:abc/x", "DATABASE_URL"),
        ("TEST_DATABASE_URL", "mysql://u@localhost/x_test", "TEST_DATABASE_URL"),
        ("LLM_API_KEY", "sk-\u00e9t\u00e9", "LLM_API_KEY"),
        ("RAG_FUSION", "linear", "RAG_FUSION"),
        ("RAG_FUSION_VECTOR_WEIGHT", "1.5", "RAG_FUSION_VECTOR_WEIGHT"),
        ("RAG_FUSION_VECTOR_WEIGHT", "most", "RAG_FUSION_VECTOR_WEIGHT"),
        ("RAG_RERANK", "magic", "RAG_RERANK"),
        ("RAG_REFUSAL", "vibes", "RAG_REFUSAL"),
        ("RAG_HNSW_TARGET_RECALL", "0", "greater than 0 and at most 1"),
        ("RAG_HNSW_TARGET_RECALL", "1.01", "RAG_HNSW_TARGET_RECALL"),
        ("RAG_HNSW_TARGET_RECALL", "-0.5", "RAG_HNSW_TARGET_RECALL"),
        ("RAG_HNSW_TARGET_RECALL", "nan", "RAG_HNSW_TARGET_RECALL"),
        ("RAG_HNSW_TARGET_RECALL", "98%", "is not a number"),
        ("RAG_DOCUMENT_MAX_PARAGRAPHS", "0", "RAG_DOCUMENT_MAX_PARAGRAPHS"),
        ("RAG_DOCUMENT_MAX_PARAGRAPHS", "many", "RAG_DOCUMENT_MAX_PARAGRAPHS"),
        ("RAG_ANSWER_DISCLAIMER", "line one\nline two", "must be one line"),
        ("RAG_ANSWER_DISCLAIMER", "x" * 501, "at most 500 characters"),
        ("RAG_CONVERSATION_HISTORY_TURNS", "51", "RAG_CONVERSATION_HISTORY_TURNS"),
        ("RAG_CONDENSE_TIMEOUT_SECONDS", "0", "RAG_CONDENSE_TIMEOUT_SECONDS"),
        ("RAG_CONVERSATION_RETENTION_DAYS", "0", "RAG_CONVERSATION_RETENTION_DAYS"),
    ],
)
def test_invalid_value_is_an_error_naming_the_variable(project, variable, value, fragment):
    with pytest.raises(ConfigError) as err:
        config_load(environ={variable: value}, start_dir=project)
    assert err.value.variable == variable
    assert fragment in err.value.message


def test_hnsw_target_recall_defaults_to_0_98_and_takes_any_share_up_to_1(project: Path):
    assert config_load(environ={}, start_dir=project).rag_hnsw_target_recall == 0.98
    for value, expected in (("1", 1.0), ("0.9", 0.9), ("0.001", 0.001)):
        config = config_load(environ={"RAG_HNSW_TARGET_RECALL": value}, start_dir=project)
        assert config.rag_hnsw_target_recall == expected


def test_qwen_provider_requires_its_fixed_model(project: Path):
    with pytest.raises(ConfigError) as err:
        config_load(environ={"EMBEDDING_PROVIDER": "local-qwen3",
                             "EMBEDDING_MODEL": "fake-lexical-v1"}, start_dir=project)
    assert "Qwen/Qwen3-Embedding-0.6B" in err.value.message


def test_threshold_defaults_per_provider_and_explicit_value_wins(project: Path):
    fake = config_load(environ={}, start_dir=project)
    qwen = config_load(environ={"EMBEDDING_PROVIDER": "local-qwen3"}, start_dir=project)
    explicit = config_load(environ={"EMBEDDING_PROVIDER": "local-qwen3",
                                    "RAG_MIN_SIMILARITY": "0.5"}, start_dir=project)
    assert (fake.threshold, fake.threshold_origin) == (0.20, "fake default")
    assert (qwen.threshold, qwen.embedding_model) == (0.35, "Qwen/Qwen3-Embedding-0.6B")
    assert (explicit.threshold, explicit.threshold_origin) == (0.5, "explicit")


def test_fusion_weight_and_rerank_default_per_provider_and_explicit_values_win(project: Path):
    fake = config_load(environ={}, start_dir=project)
    local = config_load(environ={"EMBEDDING_PROVIDER": "local-qwen3"}, start_dir=project)
    explicit = config_load(environ={"RAG_FUSION_VECTOR_WEIGHT": "0.4", "RAG_RERANK": "features",
                                    "RAG_FUSION": "rrf"}, start_dir=project)
    assert (fake.fusion_vector_weight, fake.rag_rerank, fake.rag_fusion) == (0.25, "none",
                                                                             "convex")
    assert (local.fusion_vector_weight, local.rag_rerank) == (0.7, "none")
    assert (explicit.fusion_vector_weight, explicit.rag_rerank, explicit.rag_fusion) == (
        0.4, "features", "rrf")


def test_refusal_rule_is_unset_by_default_and_an_explicit_value_is_kept(project: Path):
    assert config_load(environ={}, start_dir=project).rag_refusal is None
    for rule in ("threshold", "signals"):
        assert config_load(environ={"RAG_REFUSAL": rule}, start_dir=project).rag_refusal == rule


def test_explicit_threshold_from_dotenv_wins_too(project: Path):
    write_env(project, RAG_MIN_SIMILARITY="0.31")
    assert config_load(environ={}, start_dir=project).threshold == 0.31


def test_invalid_key_error_does_not_echo_the_key(project: Path):
    with pytest.raises(ConfigError) as err:
        config_load(environ={"LLM_API_KEY": "sk-sécret"}, start_dir=project)
    assert "sécret" not in err.value.message




def test_upload_dir_is_the_projects_unless_absolute(project: Path, tmp_path_factory):
    def upload_dir(**environ: str) -> Path:
        return config_load(environ=environ, start_dir=project).upload_dir

    assert upload_dir() == project / ".local" / "uploads"
    assert upload_dir(UPLOAD_DIR="shared/up") == project / "shared" / "up"
    share = tmp_path_factory.mktemp("share")
    assert upload_dir(UPLOAD_DIR=str(share)) == share
