"""Conversations over a real socket (`rag serve`): a Chinese and an English conversation whose
follow-ups only make sense with the turn before — answered with the conversation, refused
without it — and another token's conversation not found."""

from __future__ import annotations

import httpx

from tests.commands.test_serve import serve  # noqa: F401 - the fixture
from tests.harness import ROOT

ZH = ["数据库主库故障怎么 failover？", "之后要做什么？", "那连接数打满呢？"]
EN = ["What are the Atlas CRM export limits?", "and how many rows can they hold?"]
POSTGRES = "runbooks/Postgres Incident Runbook.md"
ATLAS = {"products/Atlas CRM FAQ.md", "products/Atlas CRM.md"}


def test_follow_ups_keep_their_context_over_http(clean_tables, serve, run_cli):  # noqa: F811
    assert run_cli("ingest", str(ROOT / "samples" / "acme-vault")).returncode == 0
    for name in ("ana", "bo"):
        made = run_cli("shell", "-c", "from django.contrib.auth import get_user_model; "
                       f"get_user_model().objects.create_superuser('{name}', '', 'pw-unused-1x')")
        assert made.returncode == 0, made.stderr
    ana, bo = ({"Authorization": "Bearer " + run_cli("token", "create", "--user", name
                                                     ).stdout.strip()} for name in ("ana", "bo"))
    server = serve()
    with httpx.Client(base_url=server.url, timeout=30) as http:
        created = http.post("/conversations", headers=ana, json={"question": ZH[0]})
        assert created.status_code == 201, created.text
        conversation = created.json()
        assert POSTGRES in {c["source"] for c in conversation["answer"]["citations"]}
        url = f"/conversations/{conversation['id']}/messages"
        for question in ZH[1:]:
            turn = http.post(url, headers=ana, json={"question": question}).json()
            assert turn["mode"] == "rag" and turn["condensation"] == "rule", turn
            assert turn["citations"][0]["source"] == POSTGRES, turn
        alone = http.post("/ask", headers=ana, json={"question": ZH[1]}).json()
        assert alone["mode"] == "no_answer"

        english = http.post("/conversations", headers=ana, json={"question": EN[0]}).json()
        turn = http.post(f"/conversations/{english['id']}/messages", headers=ana,
                         json={"question": EN[1]}).json()
        assert turn["mode"] == "rag" and {c["source"] for c in turn["citations"]} & ATLAS
        assert http.post("/ask", headers=ana, json={"question": EN[1]}).json()["mode"] == (
            "no_answer")

        thread = http.get(f"/conversations/{conversation['id']}", headers=ana).json()
        assert [m["text"] for m in thread["messages"] if m["role"] == "user"] == ZH
        assert http.get(f"/conversations/{conversation['id']}", headers=bo).status_code == 404
        assert http.post(url, headers=bo, json={"question": "再说一遍"}).status_code == 404
        assert [c["id"] for c in http.get("/conversations", headers=ana).json()] == [
            english["id"], conversation["id"]]
        assert http.get("/conversations", headers=bo).json() == []
