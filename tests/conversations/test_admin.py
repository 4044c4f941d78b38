"""The conversations admin shows conversations and their messages, and changes nothing."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client

from conversations.models import Conversation, Message


def test_the_admin_lists_and_shows_but_does_not_change_conversations(db):
    admin = get_user_model().objects.create_superuser("boss", "", "pw-unused-9")
    conversation = Conversation.objects.create(owner="user:1", title="P1 升级")
    Message.objects.create(conversation=conversation, role="assistant", text="升级到 SRE",
                           standalone_query="客户 P2 工单应该怎么升级？", condensation="rule")
    client = Client()
    client.force_login(admin)
    listing = client.get("/admin/conversations/conversation/")
    assert listing.status_code == 200 and "P1 升级" in listing.content.decode()
    page = client.get(f"/admin/conversations/conversation/{conversation.pk}/change/")
    assert page.status_code == 200 and "客户 P2 工单应该怎么升级？" in page.content.decode()
    assert client.get("/admin/conversations/conversation/add/").status_code == 403
    assert client.post(f"/admin/conversations/conversation/{conversation.pk}/delete/",
                       {"post": "yes"}).status_code == 403
    assert client.get("/admin/conversations/message/").status_code == 200
    assert Conversation.objects.filter(pk=conversation.pk).exists()
