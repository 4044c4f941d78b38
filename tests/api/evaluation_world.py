"""The world of the evaluation API tests: the sample vault in `default`, an empty `hidden` base,
and a token each for an admin, a researcher, a maintainer and a reader of `default`."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.test import Client

from access.api_tokens import token_create
from access.models import Grant
from jobs.worker import Worker
from knowledge.bases import kb_create, kb_get

ENV_TOKEN = "env-admin-token-eval-5c1"
IN_DOMAIN = "客户提交的 P1 工单如何升级？"
OUT_OF_DOMAIN = "明天巴黎天气如何？"
ESCALATION = "policies/Support Escalation Policy.md"
YAML = f"""questions:
  - id: q1
    question: {IN_DOMAIN}
    expected_sources: ["{ESCALATION}"]
    expected_mode: rag
  - id: ood
    question: {OUT_OF_DOMAIN}
    expected_mode: no_answer
"""


def question(question_id: str, text: str, *, sources: list[str] | None = None,
             mode: str = "rag", **more: object) -> dict:
    return {"id": question_id, "question": text, "expected_sources": sources or [],
            "expected_mode": mode, **more}


Headers = Callable[[str], dict[str, str]]


def evaluation_team(config_override: Callable[..., object]) -> Headers:
    """Access control on, the `hidden` base and the people; returns name -> the Authorization
    header of `root` (superuser), `res` (researcher of default), `mo` (maintainer of default)
    or `ana` (reader of default). Needs the sample vault ingested (`sample_index`)."""
    config_override(rag_api_token=ENV_TOKEN)
    kb_create(slug="hidden", name="Hidden")
    default = kb_get("default").id
    users = get_user_model().objects
    users.create_superuser(username="root", password="pw")
    for username, role in (("res", Grant.RESEARCHER), ("mo", Grant.MAINTAINER),
                           ("ana", Grant.READER)):
        user = users.create_user(username=username, password="pw")
        Grant.objects.create(user=user, knowledge_base_id=default, role=role)
    secrets = {name: token_create(username=name).secret for name in ("root", "res", "mo", "ana")}
    return lambda name: {"HTTP_AUTHORIZATION": f"Bearer {secrets[name]}"}


def send(client: Client, method: str, path: str, body: object, headers: dict[str, str]):
    return getattr(client, method)(path, data=json.dumps(body), content_type="application/json",
                                   **headers)


def set_create(client: Client, headers: dict[str, str], *, name: str = "demo",
               slug: str = "default", **body: object):
    payload = {"knowledge_base": slug, "name": name, **body}
    if "questions" not in body and "yaml" not in body:
        payload["yaml"] = YAML
    return send(client, "post", "/evaluation/sets", payload, headers)


def run_start(client: Client, headers: dict[str, str], set_id: int, **body: object):
    return send(client, "post", "/evaluation/runs", {"question_set": set_id, **body}, headers)


def work() -> None:
    """Run every due job on this thread (inside the test's transaction), as `rag worker`."""
    worker = Worker(poll_seconds=0.01)
    while worker.run_once():
        pass


def finished_run(client: Client, headers: dict[str, str], set_id: int, **body: object) -> dict:
    started = run_start(client, headers, set_id, **body)
    assert started.status_code == 202, started.content
    work()
    run = client.get(f"/evaluation/runs/{started.json()['id']}", **headers).json()
    assert run["status"] == "done", run
    return run
