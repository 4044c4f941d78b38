"""Read-only admin of conversations: who asked what, what was searched, what was cited, and the
feedback people gave; deleting is the owner's (API, workbench) or the retention's business."""

from __future__ import annotations

from django.contrib import admin

from conversations.models import Conversation, Message
from core.admin import ReadOnlyAdminMixin


class MessageInline(admin.TabularInline[Message, Conversation]):
    model = Message
    fields = ("created_at", "role", "text", "mode", "standalone_query", "condensation",
              "trace_id", "rating", "error_type")
    readonly_fields = fields
    extra = 0
    can_delete = False
    max_num = 0  # no "add another": the conversation's owner writes its messages


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdminMixin[Conversation], admin.ModelAdmin[Conversation]):
    list_display = ("title", "owner", "user", "knowledge_bases", "created_at", "updated_at")
    list_select_related = ("user",)
    list_filter = ("updated_at",)
    search_fields = ("title", "owner")
    inlines = (MessageInline,)


@admin.register(Message)
class MessageAdmin(ReadOnlyAdminMixin[Message], admin.ModelAdmin[Message]):
    list_display = ("created_at", "conversation", "role", "mode", "condensation", "rating",
                    "error_type")
    list_select_related = ("conversation",)
    list_filter = ("role", "mode", "condensation", "rating", "error_type")
    search_fields = ("text", "standalone_query", "trace_id")
