"""`rag conversations eval` on the checked-in multi-turn set, and `rag conversations prune`."""

from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from conversations.models import Conversation, Message
from conversations.services import conversations_prune
from tests.harness import ROOT

EVAL_FILE = ROOT / "eval" / "conversations.yaml"


def test_the_follow_ups_of_the_evaluation_set_are_found_more_often_with_their_conversation(
        clean_tables, run_cli):
    assert run_cli("ingest", str(ROOT / "samples" / "acme-vault")).returncode == 0
    result = run_cli("conversations", "eval", str(EVAL_FILE), "--kb", "default", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    overall = next(line for line in report["summary"] if line["split"] == "all")
    assert overall["follow_ups"] >= 24 and overall["condensed"] > overall["follow_ups"] / 2
    assert overall["doc_hit_at_1_condensed"] > overall["doc_hit_at_1_as_asked"]
    assert {line["split"] for line in report["summary"]} == {"all", "dev", "test"}
    first_turns = [row for row in report["turns"] if not row["follow_up"]]
    assert all(row["condensation"] == "as_asked" for row in first_turns)

    table = run_cli("conversations", "eval", str(EVAL_FILE), "--kb", "default", "--split", "test")
    assert table.returncode == 0 and "hit@1 as asked" in table.stdout


def test_a_file_that_is_not_an_evaluation_set_is_a_clear_error(run_cli, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("conversations:\n  - id: c1\n    turns: []\n", encoding="utf-8")
    result = run_cli("conversations", "eval", str(broken))
    assert result.returncode == 2
    assert "not a conversations evaluation file" in result.stderr and "no turns" in result.stderr


def test_conversations_past_their_retention_are_pruned_with_their_messages(db):
    old = Conversation.objects.create(owner="local", title="old")
    Message.objects.create(conversation=old, role="user", text="q")
    recent = Conversation.objects.create(owner="local", title="recent")
    Conversation.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timedelta(days=40))
    assert conversations_prune(days=30) == 1
    assert list(Conversation.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not Message.objects.exists()
