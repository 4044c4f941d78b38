"""`rag user create | list`, `rag grant`, `rag revoke`: a new team's people and their grants
from the command line, and the token command's advice when a person is missing."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import get_user_model

from access.callers import caller_for_secret
from access.models import Grant
from core.config import get_config
from knowledge.bases import kb_create
from tests.commands.support import rag, rag_ok, rag_refused


@pytest.fixture
def bases(db):
    return {slug: kb_create(slug=slug).id for slug in ("hr", "eng")}


def test_a_person_is_created_with_a_generated_password_shown_once(bases):
    out, err = rag_ok("user", "create", "alice", "--email", "alice@example.org")
    password = out.split("password: ", 1)[1].strip()
    assert len(password) >= 20 and "not shown again" in err and "rag grant alice" in err
    user = get_user_model().objects.get(username="alice")
    assert not user.is_staff and not user.is_superuser and user.email == "alice@example.org"
    assert user.check_password(password)
    # Only its hash is stored.
    assert password not in user.password


def test_a_given_password_is_checked_and_a_taken_name_refused(bases, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse battery staple\n"))
    out, _ = rag_ok("user", "create", "bo", "--staff", "--password-stdin")
    assert "password:" not in out
    assert get_user_model().objects.get(username="bo").is_staff
    assert get_user_model().objects.get(username="bo").check_password(
        "correct horse battery staple")
    monkeypatch.setattr("sys.stdin", io.StringIO("x\n"))
    assert "too short" in rag_refused("user", "create", "cy", "--password-stdin")
    code, _, err = rag("user", "create", "bo")
    assert code != 0 and "exists already" in err
    assert "user name" in rag_refused("user", "create", "bad name!")


def test_grants_give_replace_and_take_away_roles_and_tokens_follow(bases):
    rag_ok("user", "create", "alice")
    assert rag_ok("grant", "alice", "hr", "reader")[0].strip() == "alice is now reader on hr"
    assert "reader on hr already" in rag_ok("grant", "alice", "hr", "reader")[0]
    assert "(was reader)" in rag_ok("grant", "alice", "hr", "maintainer")[0]
    rag_ok("grant", "alice", "eng", "reader")
    assert dict(Grant.objects.values_list("knowledge_base_id", "role")) == {
        bases["hr"]: "maintainer", bases["eng"]: "reader"}
    listing = json.loads(rag_ok("user", "list", "--json")[0])
    assert [(p["username"], p["grants"]) for p in listing] == [
        ("alice", {"eng": "reader", "hr": "maintainer"})]
    secret = rag_ok("token", "create", "--user", "alice")[0].strip()
    caller = caller_for_secret(secret, config=get_config())
    assert caller is not None and set(caller.scope().knowledge_base_ids) == set(bases.values())
    assert "no longer maintainer on hr" in rag_ok("revoke", "alice", "hr")[0]
    caller = caller_for_secret(secret, config=get_config())
    assert caller is not None and list(caller.scope().knowledge_base_ids) == [bases["eng"]]


def test_rag_grant_researcher_gives_research_rights_but_no_writing(bases):
    rag_ok("user", "create", "rae")
    assert rag_ok("grant", "rae", "hr", "researcher")[0].strip() == "rae is now researcher on hr"
    rag_ok("grant", "rae", "eng", "reader")
    assert "(was reader)" in rag_ok("grant", "rae", "eng", "researcher")[0]
    assert "(was researcher)" in rag_ok("grant", "rae", "eng", "reader")[0]
    secret = rag_ok("token", "create", "--user", "rae")[0].strip()
    caller = caller_for_secret(secret, config=get_config())
    assert caller is not None
    assert (caller.may_research(bases["hr"]), caller.may_maintain(bases["hr"])) == (True, False)
    assert (caller.role(bases["hr"]), caller.role(bases["eng"])) == ("researcher", "reader")
    assert not caller.may_research(bases["eng"])
    assert caller.researching().scope().knowledge_base_ids == (bases["hr"],)
    listing = json.loads(rag_ok("user", "list", "--json")[0])
    assert [p["grants"] for p in listing if p["username"] == "rae"] == [
        {"eng": "reader", "hr": "researcher"}]


def test_an_unknown_role_is_refused_naming_the_three(bases):
    from access.management.commands.grant import Command
    from access.people import grant_set
    from core.errors import InvalidRequest

    rag_ok("user", "create", "rae")
    with pytest.raises(InvalidRequest, match="reader, researcher, maintainer"):
        grant_set(username="rae", slug="hr", role="admin")
    assert not Grant.objects.exists()
    assert all(role in Command.help for role in ("reader", "researcher", "maintainer"))


def test_refusals_name_what_is_missing(bases):
    rag_ok("user", "create", "alice")
    code, _, err = rag("grant", "nobody", "hr", "reader")
    assert code != 0 and "rag user create nobody" in err
    code, _, err = rag("grant", "alice", "nowhere", "reader")
    assert code != 0 and "knowledge base not found: nowhere" in err
    code, _, err = rag("revoke", "alice", "hr")
    assert code != 0 and "alice has no grant on hr" in err
    code, _, err = rag("token", "create", "--user", "nobody")
    assert code != 0 and "rag user create nobody" in err and "createsuperuser" not in err
