"""The settings table (core/settings_table.py) is the one list of settings: `Config`, `rag config`,
`.env.sample` and docs/configuration.md agree with it, and every bound it states holds."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path

import pytest

from core.config import Config, ConfigError, config_load, config_with, get_config
from core.config_parse import Choice, Integer, Number
from core.settings_table import SETTINGS, SETTINGS_BY_NAME
from tests.harness import NOT_SETTINGS, ROOT

# Config fields that hold no one setting's value: where the values came from.
BOOKKEEPING = NOT_SETTINGS | {"raw", "sources"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / ".env.sample").write_text("")
    return tmp_path


def env_sample_items() -> list[tuple[str, str]]:
    lines = (ROOT / ".env.sample").read_text().splitlines()
    return [(line.split("=", 1)[0], line.split("=", 1)[1]) for line in lines
            if line and not line.startswith("#")]


def test_env_sample_holds_every_setting_once_with_its_default() -> None:
    items = env_sample_items()
    assert sorted(name for name, _ in items) == sorted(SETTINGS_BY_NAME)
    for name, value in items:
        setting = SETTINGS_BY_NAME[name]
        assert value == (setting.default if setting.sample is None else setting.sample), name


def docs_rows() -> dict[str, str]:
    """Variable -> its Default cell, from the table under "## Every setting" (a row naming
    several variables gives each its own part of a cell split the same way, or the whole)."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text.split("## Every setting", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        if not line.startswith("| `"):
            continue
        names = re.findall(r"`([A-Z0-9_]+)`", cells[0])
        defaults = cells[1].split(" / ")
        if len(defaults) != len(names):
            defaults = [cells[1]] * len(names)
        for name, default in zip(names, defaults, strict=True):
            assert name not in rows, f"{name} is listed twice"
            rows[name] = default
    return rows


def test_docs_list_every_setting_with_its_default() -> None:
    rows = docs_rows()
    assert set(rows) == set(SETTINGS_BY_NAME), set(rows) ^ set(SETTINGS_BY_NAME)
    for name, cell in rows.items():
        default = SETTINGS_BY_NAME[name].default
        if cell.startswith("`"):
            shown = cell[1:cell.index("`", 1)]
            # `…/local_rag_test`: the end of a long default.
            assert (default.endswith(shown[1:]) if shown.startswith("…")
                    else default == shown), name
        else:  # "empty", or what an unset value stands for ("the provider's")
            assert default == "", name


def test_config_has_one_field_per_setting_typed_as_its_parser_reads_it(project: Path) -> None:
    fields = {field.name: field for field in dataclasses.fields(Config)}
    assert set(fields) - BOOKKEEPING == {setting.config_field for setting in SETTINGS}
    hints = typing.get_type_hints(Config)
    config = config_load(environ={}, start_dir=project)
    for setting in SETTINGS:
        hint = hints[setting.config_field]
        kinds = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        kinds = tuple(typing.get_origin(kind) or kind for kind in kinds)
        value = getattr(config, setting.config_field)
        assert isinstance(value, kinds), (setting.name, value, hint)
        # A secret never appears in the repr that logs and tracebacks show.
        assert fields[setting.config_field].repr is not setting.secret, setting.name


def test_rag_config_lists_every_setting_in_the_tables_order_and_masks_secrets(
        project: Path) -> None:
    environ = {setting.name: "k" * 40 for setting in SETTINGS if setting.secret}
    items = config_load(environ=environ, start_dir=project).display_items()
    assert [name for name, _, _ in items] == [setting.name for setting in SETTINGS]
    shown = {name: value for name, value, _ in items}
    assert all(shown[name] == "<set>" for name in environ) and "k" * 40 not in str(items)
    unset = {setting.name for setting in SETTINGS if setting.secret and not setting.default}
    shown = {name: value for name, value, _ in config_load(environ={}, start_dir=project)
             .display_items()}
    assert unset and all(shown[name] == "<unset>" for name in unset)


def bounds() -> list[tuple[str, str, bool]]:
    """(variable, value, accepted) at and just beyond each bound and choice of the table."""
    cases: list[tuple[str, str, bool]] = []
    for setting in SETTINGS:
        parser, name = setting.parser, setting.name
        parser = getattr(parser, "inner", parser)  # OrNone: what a set value must be
        if isinstance(parser, Integer):
            cases += [(name, str(parser.low), True), (name, str(parser.low - 1), False)]
            if parser.high is not None:
                cases += [(name, str(parser.high), True), (name, str(parser.high + 1), False)]
        elif isinstance(parser, Number):
            cases += [(name, repr(parser.low), not parser.low_open),
                      (name, repr(parser.low - 0.001), False), (name, "nan", False)]
            if parser.high is not None:
                cases += [(name, repr(parser.high), True),
                          (name, repr(parser.high + 0.001), False)]
        elif isinstance(parser, Choice):
            cases += [(name, choice, True) for choice in parser.choices]
            cases += [(name, "no-such-choice", False)]
    return cases


@pytest.mark.parametrize(("variable", "value", "accepted"), bounds())
def test_each_bound_and_choice_of_the_table_holds(project: Path, variable: str, value: str,
                                                 accepted: bool) -> None:
    environ = {variable: value}
    if variable == "UPLOAD_STORE":
        environ["UPLOAD_S3_BUCKET"] = "uploads"  # what s3 needs beside it
    if not accepted:
        with pytest.raises(ConfigError) as err:
            config_load(environ=environ, start_dir=project)
        assert err.value.variable == variable
        return
    config = config_load(environ=environ, start_dir=project)
    assert config.raw[variable] == value and config.sources[variable] == "env"


def test_a_name_outside_the_table_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        config_with(get_config(), RAG_TOPK="3")
    assert err.value.variable == "RAG_TOPK"
