"""Where the admin of the moved models answers now, and that their old addresses lead there."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("old", "new"), [
    ("/admin/knowledge/apitoken/", "/admin/access/apitoken/"),
    ("/admin/knowledge/grant/7/change/", "/admin/access/grant/7/change/"),
    ("/admin/knowledge/trace/?status__exact=error", "/admin/traces/trace/?status__exact=error"),
    ("/admin/knowledge/backgroundjob/", "/admin/jobs/backgroundjob/"),
])
def test_an_old_admin_address_of_a_moved_model_redirects_to_its_app(client, old, new):
    response = client.get(old)
    assert response.status_code == 301
    assert response["Location"] == new


def test_the_knowledge_apps_own_models_do_not_redirect(admin_client, db):
    assert admin_client.get("/admin/knowledge/document/").status_code == 200
    assert admin_client.get("/admin/knowledge/chunk/").status_code == 200


@pytest.mark.parametrize("page", ["/admin/access/grant/", "/admin/access/apitoken/",
                                  "/admin/traces/trace/", "/admin/jobs/backgroundjob/"])
def test_each_moved_model_has_its_admin_page(admin_client, db, page):
    response = admin_client.get(page)
    assert response.status_code == 200
    assert 'id="changelist"' in response.content.decode()


def test_the_admins_grant_form_offers_the_three_roles_and_stores_a_researcher(admin_client, db):
    from django.contrib.auth import get_user_model

    from access.models import Grant
    from knowledge.bases import kb_get

    form = admin_client.get("/admin/access/grant/add/").content.decode()
    for role in ("reader", "researcher", "maintainer"):
        assert f'<option value="{role}"' in form
    user = get_user_model().objects.create_user(username="rae", password="pw")
    response = admin_client.post("/admin/access/grant/add/", {
        "user": user.pk, "knowledge_base": kb_get("default").id, "role": "researcher"})
    assert response.status_code == 302
    assert Grant.objects.get(user=user).role == Grant.RESEARCHER
