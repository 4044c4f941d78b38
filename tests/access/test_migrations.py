"""The grant, token, job and trace models moved out of the knowledge app by migrations that
change Django's state only: their tables and rows stay, and their content types (with the
permissions and admin history that point at them) follow them to their new apps."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from access.models import ApiToken, Grant
from jobs.models import BackgroundJob
from traces.models import Trace

MOVED = {"grant": "access", "apitoken": "access", "backgroundjob": "jobs", "trace": "traces"}


def test_no_model_change_is_left_without_a_migration(db):
    # Exits with status 1 (SystemExit) when a model differs from its migrations.
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_the_moved_models_keep_their_tables():
    assert Grant._meta.db_table == "knowledge_grant"
    assert ApiToken._meta.db_table == "knowledge_apitoken"
    through = ApiToken._meta.get_field("knowledge_bases").remote_field.through
    assert through._meta.db_table == "knowledge_apitoken_knowledge_bases"
    assert (BackgroundJob._meta.db_table, Trace._meta.db_table) == ("background_jobs", "traces")


@pytest.mark.django_db(transaction=True)
def test_moving_the_models_keeps_their_rows_and_content_types(django_user_model):
    user = django_user_model.objects.create_user("mover")
    # Back to before the move: the four models are the knowledge app's again.
    call_command("migrate", "knowledge", "0001", verbosity=0)
    for app in ("access", "jobs", "traces"):
        call_command("migrate", app, "zero", verbosity=0)
    # A database from before the move has no content types of the new apps (the commands above
    # created them after they ran).
    ContentType.objects.filter(app_label__in=set(MOVED.values())).delete()
    ContentType.objects.clear_cache()
    before = {model: ContentType.objects.get_or_create(app_label="knowledge", model=model)[0].pk
              for model in MOVED}
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO knowledge_grant (user_id, knowledge_base_id, role, created_at) "
                       "VALUES (%s, 1, 'maintainer', now()) RETURNING id", [user.pk])
        grant_id = cursor.fetchone()[0]

    call_command("migrate", verbosity=0)

    ContentType.objects.clear_cache()
    assert Grant.objects.get(pk=grant_id).user == user
    assert Grant.objects.get(pk=grant_id).role == Grant.MAINTAINER
    for model, app in MOVED.items():
        assert ContentType.objects.get(app_label=app, model=model).pk == before[model]
        assert not ContentType.objects.filter(app_label="knowledge", model=model).exists()
    tables = set(connection.introspection.table_names())
    assert {"knowledge_grant", "knowledge_apitoken", "background_jobs", "traces"} <= tables
    assert not tables & {"access_grant", "access_apitoken", "jobs_backgroundjob", "traces_trace"}
