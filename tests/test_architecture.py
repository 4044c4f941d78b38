"""The layers import one way: core <- audit <- access, jobs, traces <- knowledge <- review,
watching <- index <- retrieval <- answering <- workbench <- localrag_site. Apps of one layer
(access, jobs, traces; review, watching) are peers that import none of each other.

Parsed, not imported: every `import` and `from ... import` in a module counts, including those
inside functions and `if TYPE_CHECKING:` blocks, because a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.harness import ROOT

TIERS = (("core",), ("audit",), ("access", "jobs", "traces"), ("parsing",), ("embeddings",),
         ("knowledge",), ("review", "watching"), ("index",), ("retrieval",), ("answering",),
         ("conversations",), ("evaluation",), ("ops",), ("workbench",), ("localrag_site",))
LAYERS = tuple(package for tier in TIERS for package in tier)


def tier_of(package: str) -> int:
    return next(index for index, tier in enumerate(TIERS) if package in tier)


def imported_packages(source: str, *, package: str) -> set[str]:
    """Top-level project packages that `source` (a module of `package`) imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # A relative import stays inside its own package.
            names = [package if node.level else (node.module or "")]
        else:
            continue
        found.update(name.split(".")[0] for name in names if name.split(".")[0] in LAYERS)
    return found


def layer_violations(source: str, *, package: str) -> set[str]:
    """Higher layers, and peers of its own layer, that a module of `package` imports."""
    forbidden = {other for other in LAYERS
                 if other != package and tier_of(other) >= tier_of(package)}
    return imported_packages(source, package=package) & forbidden


def project_modules() -> list[tuple[str, Path]]:
    return [(package, path) for package in LAYERS[:-1]
            for path in sorted((ROOT / package).rglob("*.py"))]


@pytest.mark.parametrize(("package", "path"), project_modules(),
                         ids=lambda value: str(value.relative_to(ROOT)) if isinstance(value, Path)
                         else value)
def test_no_module_imports_a_higher_layer(package: str, path: Path):
    violations = layer_violations(path.read_text(encoding="utf-8"), package=package)
    assert not violations, f"{path.relative_to(ROOT)} ({package}) imports {sorted(violations)}"


def test_every_layer_has_modules_to_check():
    packages = {package for package, _ in project_modules()}
    assert packages == set(LAYERS[:-1])


@pytest.mark.parametrize(("package", "source", "expected"), [
    ("core", "from knowledge.bases import kb_create", {"knowledge"}),
    ("core", "def f():\n    import answering.llm\n", {"answering"}),
    ("knowledge", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                  "    from retrieval.types import SearchHit\n", {"retrieval"}),
    ("retrieval", "import localrag_site.settings", {"localrag_site"}),
    ("answering", "from retrieval.services import search\nfrom core import db\n", set()),
    ("knowledge", "from . import sql\nfrom .embeddings import base\n", set()),
    ("knowledge", "from access.callers import Scope\nfrom jobs.worker import JobContext\n", set()),
    ("access", "from knowledge.models import KnowledgeBase\n", {"knowledge"}),
    ("access", "from traces.recording import trace_current\n", {"traces"}),
    ("jobs", "def f():\n    from access import callers\n", {"access"}),
    ("traces", "from core.db import db_errors_translated\n", set()),
])
def test_checker_sees_imports_wherever_they_are(package: str, source: str, expected: set[str]):
    assert layer_violations(source, package=package) == expected


def module_level_imports() -> dict[str, set[str]]:
    """module -> the project modules it imports at module level (lazy imports excluded)."""
    paths = {}
    for _package, path in project_modules():
        parts = path.relative_to(ROOT).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in paths.items():
        targets = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {target for target in targets if target in paths and target != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk of `graph` meets, as [a, b, ..., a]."""
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                cycles.append([*path[path.index(target):], node, target] if target in path
                              else [node, target])
            elif target not in state:
                visit(target, [*path, node])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


def test_no_import_cycles_between_modules():
    assert import_cycles(module_level_imports()) == []


def test_cycle_finder_sees_an_indirect_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_every_logger_is_under_the_projects_configured_logger():
    # settings.LOGGING configures "localrag"; a logger named after its module would log nowhere.
    names = []
    for _package, path in project_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "getLogger"):
                argument = node.args[0] if node.args else None
                names.append((str(path.relative_to(ROOT)),
                              argument.value if isinstance(argument, ast.Constant) else None))
    assert names, "no logger found: the check would pass vacuously"
    assert [entry for entry in names
            if not (isinstance(entry[1], str) and entry[1].startswith("localrag."))] == []
