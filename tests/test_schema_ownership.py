"""Every app owns its tables, through its own migrations and nobody else's.

Each CREATE TABLE that the project's migrations run, as `sqlmigrate` prints them (a managed
model's CreateModel and the SQL files of RunSQLFile alike), must be in the migrations of the app
whose model names the table (Meta.db_table, or Django's default name), or, for a table that no
model names, of the app that declares it in its AppConfig as `tables_without_model`. A model
that moved to another app keeps its table: the app it moved to adopts the table by a state-only
CreateModel (SeparateDatabaseAndState), which makes the CreateModel of its first app the
creation of the table it now owns. Nothing outside the migrations creates a table.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations import CreateModel, SeparateDatabaseAndState
from django.db.migrations.state import ProjectState

from core.schema import SCHEMA_LAYERS
from tests.harness import ROOT
from tests.test_architecture import LAYERS

# CREATE TABLE and CREATE UNLOGGED TABLE, never a TEMP one; a comment's words are not SQL.
CREATE_TABLE = re.compile(r"\bCREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                          r"(?:public\.)?\"?(\w+)\"?\s*(?:\(|AS\b|PARTITION\b)", re.IGNORECASE)
COMMENT = re.compile(r"--[^\n]*")
PACKAGES = LAYERS[:-1]  # the apps; localrag_site is wiring only


@dataclass(frozen=True)
class Creation:
    app: str
    migration: str
    table: str


def tables_created(sql: str) -> list[str]:
    return CREATE_TABLE.findall(COMMENT.sub("", sql))


def project_labels() -> set[str]:
    return {config.label for config in apps.get_app_configs()
            if config.name.split(".")[0] in PACKAGES}


def migration_creations() -> list[Creation]:
    """The tables each migration of the project's apps creates, from the SQL it runs on a new
    database (the other apps' migrations only advance Django's state)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    ours = project_labels()
    state = ProjectState(real_apps=loader.unmigrated_apps)
    seen: set[tuple[str, str]] = set()
    creations = []
    for leaf in loader.graph.leaf_nodes():
        for key in loader.graph.forwards_plan(leaf):
            if key in seen:
                continue
            seen.add(key)
            migration = loader.graph.nodes[key]
            if key[0] not in ours:
                state = migration.mutate_state(state, preserve=False)
                continue
            with connection.schema_editor(collect_sql=True, atomic=False) as editor:
                state = migration.apply(state, editor, collect_sql=True)
            creations += [Creation(key[0], key[1], table)
                          for table in tables_created("\n".join(editor.collected_sql))]
    return creations


def adoptions() -> set[tuple[str, str]]:
    """(app, table) of each state-only CreateModel naming its table: a model moved to `app`
    with its table (and the tables of its many-to-many fields)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    adopted = set()
    for (app, _), migration in loader.disk_migrations.items():
        for operation in migration.operations:
            if not isinstance(operation, SeparateDatabaseAndState):
                continue
            for state in operation.state_operations:
                if isinstance(state, CreateModel) and "db_table" in state.options:
                    table = state.options["db_table"]
                    adopted.add((app, table))
                    adopted |= {(app, field.db_table or f"{table}_{name}")
                                for name, field in state.fields if field.many_to_many}
    return adopted


def model_owners() -> dict[str, str]:
    """table -> the app whose model names it (many-to-many tables: the declaring model's)."""
    return {model._meta.db_table: model._meta.app_label
            for model in apps.get_models(include_auto_created=True)}


def declared_tables() -> dict[str, list[str]]:
    """table -> the apps that declare it in `tables_without_model`."""
    declared: dict[str, list[str]] = {}
    for config in apps.get_app_configs():
        for table in getattr(config, "tables_without_model", ()):
            declared.setdefault(table, []).append(config.label)
    return declared


def ownership_violations(creations: Iterable[Creation], *, models: dict[str, str],
                         declared: dict[str, list[str]],
                         adopted: set[tuple[str, str]]) -> list[str]:
    creations = list(creations)
    problems = []
    for table, declarers in sorted(declared.items()):
        if len(declarers) > 1:
            problems.append(f"{table} is declared by {', '.join(declarers)}")
        if table in models:
            problems.append(f"{table} is declared by {declarers[0]}, yet a model of "
                            f"{models[table]} names it")
    owners = {table: declarers[0] for table, declarers in declared.items()} | models
    for creation in creations:
        owner = owners.get(creation.table)
        where = f"{creation.app} {creation.migration} creates {creation.table}"
        if owner is None:
            problems.append(f"{where}, which no model names and no app declares")
        elif owner != creation.app and (owner, creation.table) not in adopted:
            problems.append(f"{where}, a table of {owner}")
    created = {(creation.app, creation.table) for creation in creations}
    for table, declarers in sorted(declared.items()):
        problems += [f"{app} declares {table}, which its migrations do not create"
                     for app in declarers if (app, table) not in created]
    return problems


@pytest.fixture(scope="module")
def creations(django_db_setup, django_db_blocker) -> list[Creation]:
    # The schema editor that writes the SQL quotes values through the database connection.
    with django_db_blocker.unblock():
        return migration_creations()


def test_every_table_is_created_by_the_migrations_of_the_app_that_owns_it(creations):
    assert {"documents", "chunks", "traces", "background_jobs", "token_failures",
            "search_index_changes", "knowledge_grant"} <= {c.table for c in creations}
    assert ownership_violations(creations, models=model_owners(), declared=declared_tables(),
                                adopted=adoptions()) == []


def test_every_model_of_the_project_has_its_table_created_by_a_migration(creations):
    created = {creation.table for creation in creations}
    ours = project_labels()
    missing = sorted(table for table, app in model_owners().items()
                     if app in ours and table not in created)
    assert missing == []


@pytest.mark.parametrize(("creations", "declared", "expected"), [
    ([Creation("jobs", "0004_audit", "traces")], {},
     ["jobs 0004_audit creates traces, a table of traces"]),
    ([Creation("knowledge", "0018_scratch", "scratch")], {},
     ["knowledge 0018_scratch creates scratch, which no model names and no app declares"]),
    ([Creation("jobs", "0003_job_workers", "job_workers")], {"job_workers": ["access"]},
     ["jobs 0003_job_workers creates job_workers, a table of access",
      "access declares job_workers, which its migrations do not create"]),
    ([Creation("jobs", "0003_job_workers", "job_workers")],
     {"job_workers": ["jobs", "access"]},
     ["job_workers is declared by jobs, access",
      "access declares job_workers, which its migrations do not create"]),
    ([], {"traces": ["traces"]},
     ["traces is declared by traces, yet a model of traces names it",
      "traces declares traces, which its migrations do not create"]),
    # A model moved to access with its table, adopted there: knowledge's CreateModel made it.
    ([Creation("knowledge", "0001_initial", "knowledge_grant")], {}, []),
    ([Creation("knowledge", "0001_initial", "knowledge_apitoken")], {},
     ["knowledge 0001_initial creates knowledge_apitoken, a table of access"]),
])
def test_the_check_sees_a_table_created_by_another_app(creations, declared, expected):
    models = {"traces": "traces", "knowledge_grant": "access", "knowledge_apitoken": "access"}
    adopted = {("access", "knowledge_grant")}
    assert ownership_violations(creations, models=models, declared=declared,
                                adopted=adopted) == expected


def test_the_check_reads_create_table_as_postgresql_does():
    sql = """-- CREATE TABLE not_this (a int);
    CREATE TABLE IF NOT EXISTS lexical_stats (id bool);
    CREATE TABLE "knowledge_grant" ("id" bigint);
    create unlogged table public.scratch(a int);
    CREATE TEMP TABLE restore_members ON COMMIT DROP AS SELECT 1;
    _TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\\w+)")"""
    assert tables_created(sql) == ["lexical_stats", "knowledge_grant", "scratch"]


def project_sources() -> list[Path]:
    """The project's code and SQL outside the migrations (benchmarks and tools included)."""
    folders = [*PACKAGES, "localrag_site", "bench", "tools"]
    return sorted(path for folder in folders for pattern in ("*.py", "*.sql")
                  for path in (ROOT / folder).rglob(pattern) if "migrations" not in path.parts)


def test_nothing_outside_the_migrations_creates_a_table():
    found = {str(path.relative_to(ROOT)): tables_created(path.read_text(encoding="utf-8"))
             for path in project_sources()}
    assert len(found) > 100  # the scan read the project
    assert {path: tables for path, tables in found.items() if tables} == {}


def test_db_init_migrates_the_apps_in_the_order_of_the_layers():
    label = {config.name.split(".")[0]: config.label for config in apps.get_app_configs()}
    assert SCHEMA_LAYERS == tuple(label[package] for package in PACKAGES if package in label)


def test_every_sql_file_of_the_migrations_is_package_data():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = pyproject["tool"]["setuptools"]["package-data"]
    files = sorted(ROOT.glob("*/migrations/*.sql"))
    assert files
    for path in files:
        package = ".".join(path.parent.relative_to(ROOT).parts)
        assert any(fnmatch.fnmatch(path.name, pattern) for pattern in data.get(package, [])), path
