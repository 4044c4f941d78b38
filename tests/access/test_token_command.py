"""`rag token create | list | revoke`: the secret is printed once and never again."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model

from access.callers import caller_for_secret
from access.models import ApiToken, Grant
from core.config import get_config
from knowledge.bases import kb_create
from tests.commands.support import rag_ok, rag_refused


def token(*args: str) -> tuple[str, str]:
    return rag_ok("token", *args)


def token_refused(*args: str) -> str:
    return rag_refused("token", *args)


@pytest.fixture
def alice(db):
    user = get_user_model().objects.create_user(username="alice", password="pw")
    for slug in ("hr", "eng"):
        Grant.objects.create(user=user, knowledge_base_id=kb_create(slug=slug).id,
                             role=Grant.MAINTAINER)
    return user


def test_create_prints_only_the_token_on_stdout_and_a_note_on_stderr(alice):
    out, err = token("create", "--user", "alice", "--name", "laptop")
    secret = out.strip()
    assert out == secret + "\n" and secret.startswith("lr_")
    assert "not shown again" in err and "rag token revoke" in err
    stored = ApiToken.objects.get()
    assert (stored.name, stored.prefix, stored.read_only) == ("laptop", secret[:10], False)
    assert caller_for_secret(secret, config=get_config()).user_id == alice.pk


def test_create_json_names_the_token_once_with_its_scope(alice):
    out, _ = token("create", "--user", "alice", "--kb", "hr", "--kb", "eng", "--kb", "hr",
                   "--read-only", "--json")
    issued = json.loads(out)
    assert set(issued) == {"id", "token", "prefix", "user", "knowledge_bases", "read_only"}
    assert (issued["user"], issued["knowledge_bases"], issued["read_only"]) == (
        "alice", ["eng", "hr"], True)
    assert issued["token"].startswith(issued["prefix"])
    found = caller_for_secret(issued["token"], config=get_config())
    assert found.token_id == issued["id"] and found.writable == frozenset()


def test_list_never_shows_the_secret_or_the_hash(alice):
    secret = token("create", "--user", "alice", "--kb", "hr", "--name", "ci")[0].strip()
    token_hash = ApiToken.objects.get().token_hash
    plain, _ = token("list")
    as_json, _ = token("list", "--json")
    for output in (plain, as_json):
        assert secret not in output and token_hash not in output
        assert secret[len("lr_"):10] in output  # the prefix, to recognise it
    [listed] = json.loads(as_json)
    assert (listed["name"], listed["user"], listed["knowledge_bases"]) == ("ci", "alice", ["hr"])
    assert listed["last_used_at"] is None and listed["revoked_at"] is None
    assert listed["created_at"].startswith(str(ApiToken.objects.get().created_at.year))


def test_list_is_a_table_with_a_header_and_one_row_per_token(alice):
    laptop = json.loads(token("create", "--user", "alice", "--kb", "hr", "--kb", "eng",
                              "--read-only", "--name", "laptop", "--json")[0])
    spare = json.loads(token("create", "--user", "alice", "--json")[0])
    token("revoke", str(spare["id"]))
    stored = {row.id: row for row in ApiToken.objects.all()}

    def when(moment) -> str:
        return f"{moment:%Y-%m-%d %H:%M}"

    lines = token("list")[0].splitlines()
    assert [re.split(r" {2,}", line) for line in lines] == [
        ["ID", "TOKEN", "NAME", "USER", "KNOWLEDGE BASES", "ACCESS", "CREATED (UTC)",
         "LAST USED (UTC)", "STATUS"],
        [str(laptop["id"]), f"{laptop['prefix']}…", "laptop", "alice", "eng, hr", "read-only",
         when(stored[laptop["id"]].created_at), "never", "active"],
        [str(spare["id"]), f"{spare['prefix']}…", "-", "alice", "all of the user's",
         "the user's roles", when(stored[spare["id"]].created_at), "never",
         f"revoked {when(stored[spare['id']].revoked_at)}"],
    ]
    # Aligned: every column starts where its header does.
    starts = [lines[0].index(header) for header in ("TOKEN", "USER", "ACCESS", "STATUS")]
    for line in lines[1:]:
        assert all(line[start - 2:start] == "  " and line[start] != " " for start in starts)


def test_revoke_stops_the_token_and_list_shows_it(alice):
    issued = json.loads(token("create", "--user", "alice", "--json")[0])
    out, _ = token("revoke", str(issued["id"]))
    assert out == f"token {issued['id']} revoked; it is refused from now on\n"
    assert caller_for_secret(issued["token"], config=get_config()) is None
    assert json.loads(token("list", "--json")[0])[0]["revoked_at"] is not None
    assert "revoked " in token("list")[0]
    assert f"no active token with id {issued['id']}" in token_refused("revoke", str(issued["id"]))


@pytest.mark.django_db
def test_refusals_exit_2(alice):
    assert "error [not_found]: no user named 'bob'" in token_refused("create", "--user", "bob")
    assert "knowledge base not found: nope" in token_refused("create", "--user", "alice",
                                                             "--kb", "nope")
    assert ApiToken.objects.count() == 0
    assert "no token issued yet" in token("list")[0]


def test_the_command_line_issues_lists_and_revokes(clean_tables, run_cli):
    get_user_model().objects.create_user(username="carol", password="pw")
    created = run_cli("token", "create", "--user", "carol")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("lr_") and "not shown again" in created.stderr
    listed = run_cli("token", "list", "--json")
    assert listed.returncode == 0 and secret not in listed.stdout
    [entry] = json.loads(listed.stdout)
    assert run_cli("token", "revoke", str(entry["id"])).returncode == 0
    again = run_cli("token", "revoke", str(entry["id"]))
    assert again.returncode == 2 and "error [not_found]" in again.stderr
    no_user = run_cli("token", "create")
    assert no_user.returncode == 2 and "--user" in no_user.stderr
