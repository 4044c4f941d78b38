"""People and their grants, for the command line (`rag user`, `rag grant`, `rag revoke`): the
same users and `Grant` rows the admin edits, with the checks the admin's forms make."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, models, transaction

from access import sql
from access.callers import kb_ids_by_slug
from access.models import Grant
from audit.records import AuditEvent, audit_record
from core.db import db_errors_translated
from core.errors import Conflict, InvalidRequest, NotFound

# A ladder: each role holds the rights of the one before.
ROLES = (Grant.READER, Grant.RESEARCHER, Grant.MAINTAINER)
# A generated password: 20 URL-safe characters (~120 bits), shown once.
GENERATED_PASSWORD_BYTES = 15


@dataclass(frozen=True)
class CreatedUser:
    username: str
    # Set when the password was generated here: the only time it is ever shown.
    generated_password: str | None


@dataclass(frozen=True)
class Person:
    username: str
    email: str
    staff: bool
    superuser: bool
    active: bool
    grants: dict[str, str]  # knowledge base slug -> role


def user_create(*, username: str, email: str = "", staff: bool = False,
                password: str | None = None) -> CreatedUser:
    """A new active user; a password is generated when none is given. Conflict when the name
    is taken, InvalidRequest when the name or password does not pass Django's checks."""
    users = get_user_model()
    field = users._meta.get_field(users.USERNAME_FIELD)
    assert isinstance(field, models.Field)  # a user model's name is a concrete field
    try:
        field.clean(username, None)  # its validators and length, as the admin's form checks
    except ValidationError as exc:
        raise InvalidRequest(f"user name {username!r}: {' '.join(exc.messages)}",
                             details={"field": "username"}) from None
    generated = None
    if password is None:
        password = generated = secrets.token_urlsafe(GENERATED_PASSWORD_BYTES)
    candidate = users(username=username, email=email)
    try:
        validate_password(password, user=candidate)
    except ValidationError as exc:
        raise InvalidRequest(f"password: {' '.join(exc.messages)}",
                             details={"field": "password"}) from None
    try:
        with transaction.atomic():
            created = users.objects.create_user(username=username, email=email,
                                                password=password, is_staff=staff)
            audit_record(AuditEvent(action="user.create", object_type="user",
                                    object_id=created.pk, object_name=username,
                                    changes={"email": email, "staff": staff,
                                             "password": "generated" if generated else "set"}))
    except IntegrityError:
        raise Conflict(f"a user named {username!r} exists already",
                       details={"user": username}) from None
    return CreatedUser(username=username, generated_password=generated)


def admin_ensure(*, username: str) -> str | None:
    """Create superuser `username` with a random password unless any superuser exists; returns
    the password (to print once) or None."""
    users = get_user_model()
    with db_errors_translated(), transaction.atomic():
        if users.objects.filter(is_superuser=True).exists():
            return None
        password = secrets.token_urlsafe(12)
        created = users.objects.create_superuser(username=username, email="", password=password)
        audit_record(AuditEvent(action="user.create", object_type="user", object_id=created.pk,
                                object_name=username,
                                changes={"superuser": True, "password": "generated"}))
    return password


def people_list() -> list[Person]:
    """Every user with their grants, by name."""
    grants: dict[int, dict[str, str]] = {}
    slugs = _slugs()
    for grant in Grant.objects.all():
        slug = slugs.get(grant.knowledge_base_id)
        if slug is not None:
            grants.setdefault(grant.user_id, {})[slug] = grant.role
    return [Person(username=user.get_username(), email=user.email or "", staff=user.is_staff,
                   superuser=user.is_superuser, active=user.is_active,
                   grants=dict(sorted(grants.get(user.pk, {}).items())))
            for user in get_user_model().objects.order_by("username")]


def grant_set(*, username: str, slug: str, role: str) -> tuple[str, bool]:
    """Give `username` `role` on base `slug` (replacing the role it had there); returns
    (the previous role or "", whether anything changed)."""
    if role not in ROLES:
        raise InvalidRequest(f"role must be one of {', '.join(ROLES)}, got {role!r}",
                             details={"field": "role"})
    user, base = _user(username), _base(slug)
    with transaction.atomic():
        grant = Grant.objects.select_for_update().filter(user=user,
                                                         knowledge_base_id=base).first()
        if grant is None:
            Grant.objects.create(user=user, knowledge_base_id=base, role=role)
            _grant_audit("grant.create", username, slug, {"role": {"before": None,
                                                                    "after": role}})
            return "", True
        if grant.role == role:
            return role, False
        previous, grant.role = grant.role, role
        grant.save(update_fields=["role"])
        _grant_audit("grant.update", username, slug, {"role": {"before": previous,
                                                                "after": role}})
        return previous, True


def grant_remove(*, username: str, slug: str) -> str:
    """Take away `username`'s grant on `slug`; returns the role it had. NotFound without one."""
    user, base = _user(username), _base(slug)
    grant = Grant.objects.filter(user=user, knowledge_base_id=base).first()
    if grant is None:
        raise NotFound(f"{username} has no grant on {slug}",
                       details={"user": username, "knowledge_base": slug})
    with transaction.atomic():
        grant.delete()
        _grant_audit("grant.delete", username, slug, {"role": {"before": grant.role,
                                                                "after": None}})
    return grant.role


def _grant_audit(action: str, username: str, slug: str, changes: dict[str, Any]) -> None:
    audit_record(AuditEvent(action=action, object_type="grant", object_id=f"{username}@{slug}",
                            object_name=f"{username} on {slug}",
                            changes={"user": username, "knowledge_base": slug, **changes}))


def _user(username: str) -> User:
    try:
        return get_user_model().objects.get_by_natural_key(username)
    except get_user_model().DoesNotExist:
        raise NotFound(f"no user named {username!r}; create one with `rag user create "
                       f"{username}`", details={"user": username}) from None


def _base(slug: str) -> int:
    """The id of knowledge base `slug` (the access app reads bases by SQL: it sits below the
    knowledge app)."""
    with connection.cursor() as cursor:
        found = kb_ids_by_slug(cursor, [slug])
    if slug not in found:
        raise NotFound(f"knowledge base not found: {slug}", details={"knowledge_base": slug})
    return found[slug]


def _slugs() -> dict[int, str]:
    with connection.cursor() as cursor:
        cursor.execute(sql.KB_SLUGS)
        return dict(cursor.fetchall())
