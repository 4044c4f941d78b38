"""Admin of grants and API tokens. Grants are edited here (and on their knowledge base's page).
Tokens are only listed and revoked: a token is issued by `rag token create`, because its secret
must be shown exactly once, and the admin never renders the stored hash."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest

from access.api_tokens import tokens_revoke
from access.models import ApiToken, Grant
from audit.admin_logging import AuditedAdminMixin
from core.admin import ReadOnlyAdminMixin

NO_HASH_FIELDS = ("prefix", "name", "user", "read_only", "knowledge_bases", "created_at",
                  "last_used_at", "revoked_at")


@admin.register(Grant)
class GrantAdmin(AuditedAdminMixin[Grant], admin.ModelAdmin[Grant]):
    audit_object_type = "grant"
    audit_fields = ("user_id", "knowledge_base_id", "role")
    list_display = ("user", "knowledge_base", "role", "created_at")
    list_filter = ("role", "knowledge_base")
    list_select_related = ("user", "knowledge_base")
    search_fields = ("user__username", "knowledge_base__slug")


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdminMixin[ApiToken], admin.ModelAdmin[ApiToken]):
    """Read-only, without the hash; the one change is revoking, through the service. None is
    added here: the secret must be shown exactly once, so tokens come from `rag token create`."""

    list_display = ("id", "prefix", "name", "user", "bases", "read_only", "created_at",
                    "last_used_at", "revoked_at")
    list_filter = ("read_only", ("revoked_at", admin.EmptyFieldListFilter))
    list_select_related = ("user",)
    search_fields = ("prefix", "name", "user__username")
    fields = NO_HASH_FIELDS
    readonly_fields = NO_HASH_FIELDS
    actions = ("revoke_tokens",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiToken]:
        return super().get_queryset(request).prefetch_related("knowledge_bases")

    @admin.display(description="knowledge bases")
    def bases(self, obj: ApiToken) -> str:
        return ", ".join(base.slug for base in obj.knowledge_bases.all()) or "all granted"

    @admin.action(description="Revoke selected tokens", permissions=("revoke",))
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        revoked = tokens_revoke(token_ids=queryset.values_list("pk", flat=True))
        self.message_user(request, f"{revoked} tokens revoked: they are refused from now on",
                          messages.SUCCESS)

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("access.change_apitoken")


# Django's own user admin, with its changes in the audit log as well as in its LogEntry.
admin.site.unregister(User)


@admin.register(User)
class AuditedUserAdmin(AuditedAdminMixin[User], UserAdmin):
    audit_object_type = "user"
    audit_fields = ("username", "email", "is_active", "is_staff", "is_superuser")
