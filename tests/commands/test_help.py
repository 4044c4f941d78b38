"""`rag --help`: every command of the product is listed, with each of its actions, and no
command that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

from django.apps import apps
from django.core.management import get_commands, load_command_class

from localrag_site.cli import USAGE, main
from tests.harness import ROOT

# Django's own commands that operators are told to use (README: resetting admin's password).
DJANGO_COMMANDS_USED = {"changepassword"}


def listed() -> dict[str, str]:
    """command -> its text in USAGE: a line indented by two spaces begins an entry, a deeper
    one continues it; a command on two lines (`pg`, `db`) gets both."""
    section = USAGE.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    entries: dict[str, str] = {}
    name = ""
    for line in section.splitlines():
        if not line.startswith("   "):
            name = line.split()[0]
        entries[name] = f"{entries.get(name, '')} {line.strip()}"
    return entries


def product_commands() -> dict[str, str]:
    """command -> app, for the management commands of the project's own apps."""
    ours = {config.name for config in apps.get_app_configs()
            if Path(config.path) == ROOT / config.name}
    return {name: app for name, app in get_commands().items() if app in ours}


def actions_of(app: str, name: str) -> list[str]:
    """The words a command takes as its `action` (a choice or a sub-command), if any."""
    parser = load_command_class(app, name).create_parser("rag", name)
    return [str(choice) for action in parser._actions if action.dest == "action"
            for choice in action.choices or ()]


def test_help_prints_the_usage_without_configuration(capsys):
    main(["--help"])
    assert capsys.readouterr().out == USAGE


def test_help_lists_every_command_of_the_product_and_no_other():
    commands = product_commands()
    assert {"ask", "backup", "watch", "traces", "grant"} <= set(commands)  # found at all
    assert set(listed()) == set(commands) | DJANGO_COMMANDS_USED


def test_help_names_every_action_of_each_command():
    entries = listed()
    missing = [f"{name} {action}" for name, app in product_commands().items()
               for action in actions_of(app, name)
               if not re.search(rf"(?<![\w-]){re.escape(action)}(?![\w-])",
                                entries.get(name, ""))]
    assert actions_of("ops", "db") == ["init", "index"]  # the actions are read at all
    assert missing == []
