"""Grants and API tokens. They belong to Django's users, so they are ordinary managed models
with migrations; their tables keep the names they had as the knowledge app's. A knowledge base
is named by its model's label: access sits below the knowledge app and imports none of it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Grant(models.Model):
    """A user's role on a knowledge base, each holding the rights of the one before:
    readers search and ask; researchers also see scores, explanations, the lab, evaluation and
    the base's traces; maintainers also upload, delete and reindex. Admins (superusers) need no
    grant."""

    READER = "reader"
    RESEARCHER = "researcher"
    MAINTAINER = "maintainer"
    ROLES = [(READER, "reader"), (RESEARCHER, "researcher"), (MAINTAINER, "maintainer")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="knowledge_grants")
    knowledge_base = models.ForeignKey("knowledge.KnowledgeBase", on_delete=models.CASCADE,
                                       related_name="grants", db_constraint=False)
    role = models.CharField(max_length=16, choices=ROLES, default=READER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "knowledge_grant"
        constraints = [models.UniqueConstraint(fields=["user", "knowledge_base"],
                                               name="one_grant_per_user_and_base")]
        ordering = ["knowledge_base_id", "user_id"]

    def __str__(self) -> str:
        return f"{self.user} {self.role} on {self.knowledge_base}"


class ApiToken(models.Model):
    """An API token issued to a user: only the SHA-256 of the secret is stored. It acts with
    its user's grants, narrowed to `knowledge_bases` (when any are listed) and to reading when
    `read_only`."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=16, help_text="the token's first characters, to "
                                                       "recognise it; not secret")
    token_hash = models.CharField(max_length=64, unique=True)
    read_only = models.BooleanField(default=False)
    # True when the token was issued for listed knowledge bases: it then reads at most those,
    # and nothing once they are all gone (an empty list must not mean "every base").
    narrowed = models.BooleanField(default=False)
    knowledge_bases = models.ManyToManyField("knowledge.KnowledgeBase", blank=True,
                                             related_name="+", db_constraint=False,
                                             db_table="knowledge_apitoken_knowledge_bases")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "knowledge_apitoken"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"token {self.pk} ({self.prefix}…) of {self.user}"
