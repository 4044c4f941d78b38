"""`rag embeddings warmup` (the local-model cases are in
tests/embeddings/test_local.py)."""

from __future__ import annotations


def test_warmup_with_the_fake_provider_needs_no_model(run_cli):
    result = run_cli("embeddings", "warmup")
    assert result.returncode == 0, result.stderr
    assert "needs no model" in result.stdout and "1024 dimensions" in result.stdout
