"""The floor plan's import rules: which of shared/tickwork's rooms may import which (docs/house.md),
and no cycle between its files.

Each room is a package of shared/tickwork, or one of its top-level modules. A room imports only the rooms its row
allows; every edge points down, so no import goes upward and the rooms have no cycle. Within a room, the files
(modules) have no cycle either: one that imports another, directly or through others, is not imported back. Every
import counts, a lazy one inside a function or one under TYPE_CHECKING too: a reader follows it all the same.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "tickwork"

_BASE = {"model", "settings", "observability", "faults"}
# What each room may import besides itself. `services`, the composition root, may import anything; nothing imports it.
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "settings": {"model"},
    "faults": {"model"},
    "observability": {"model", "settings"},
    "store": _BASE,
    "aws": _BASE,
    "jobtypes": _BASE | {"aws"},
    "progress": _BASE | {"aws", "store"},
    "tick": _BASE | {"aws", "store", "jobtypes", "progress"},
    "executor": _BASE | {"aws", "store", "jobtypes", "progress"},
    "control": _BASE | {"aws", "store", "jobtypes", "progress", "tick", "executor"},
    "services": {"model", "settings", "observability", "faults", "aws", "store", "jobtypes", "progress", "tick"}
    | {"executor", "control"},
}


def room_of(module: str) -> str:
    """`tickwork.tick.dispatch` -> `tick`; `tickwork.settings` -> `settings`; `tickwork` itself -> `tickwork`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path, root: Path) -> str:
    parts = ["tickwork", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """Whether `tickwork.a.b` names a file of shared/tickwork: a.b.py, or a package's a/b/__init__.py."""
    path = PACKAGE.joinpath(*name.split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported(source: str, module: str, is_package: bool) -> set[str]:
    """The tickwork modules (or packages) one module's source imports, relative imports resolved: `from a import b`
    imports the module a.b where there is one, else the module (or package) a."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "tickwork"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "tickwork":
                continue
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if is_module(f"{target}.{alias.name}") else target)
    return found


def upward_edges(imports: Mapping[str, Iterable[str]], allowed: Mapping[str, set[str]]) -> list[str]:
    """Every import from one room into another its row does not allow, and every room the table does not know."""
    broken: list[str] = []
    for module, targets in sorted(imports.items()):
        room = room_of(module)
        if room == "tickwork":  # the package's own __init__: imports nothing
            broken += [f"{module} -> {target}" for target in sorted(targets)]
            continue
        if room not in allowed:
            broken.append(f"{module}: room {room!r} is not in the import rule's table")
            continue
        for target in sorted(targets):
            other = room_of(target)
            if other != room and other not in allowed[room]:
                broken.append(f"{module} -> {target} ({room} may not import {other})")
    return broken


def module_cycles(imports: Mapping[str, Iterable[str]]) -> list[str]:
    """Cycles between modules, each as `a -> b -> a` (at least one for each set of modules that import each other
    round; a package importing from itself is no cycle)."""
    cycles: list[str] = []
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> None:
        path.append(module)
        for target in sorted(imports.get(module, ())):
            if target == module or target in done:
                continue
            if target in path:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            else:
                visit(target)
        path.pop()
        done.add(module)

    for module in sorted(imports):
        if module not in done:
            visit(module)
    return cycles


def tickwork_imports() -> dict[str, set[str]]:
    return {
        module_name(path, PACKAGE): imported(path.read_text(), module_name(path, PACKAGE), path.name == "__init__.py")
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_every_import_between_the_rooms_points_down() -> None:
    assert upward_edges(tickwork_imports(), ALLOWED) == []


def test_no_module_imports_itself_through_others() -> None:
    assert module_cycles(tickwork_imports()) == []


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        (
            {
                "tickwork.model.job": "from tickwork.model.run_events import Notify",
                "tickwork.model.run_events": "if TYPE_CHECKING:\n    from tickwork.model.run import Run",
                "tickwork.model.run": "from tickwork.model.job import Job",
            },
            ["tickwork.model.job -> tickwork.model.run_events -> tickwork.model.run -> tickwork.model.job"],
        ),
        (
            {
                "tickwork.store.jobs": "def f():\n    from . import runs",
                "tickwork.store.runs": "from tickwork.store.jobs import JobRecords",
            },
            ["tickwork.store.jobs -> tickwork.store.runs -> tickwork.store.jobs"],
        ),
        (
            {"tickwork.store": "from tickwork.store.jobs import JobRecords", "tickwork.store.jobs": "import json"},
            [],
        ),
    ],
)
def test_the_rule_catches_a_cycle_between_modules(sources: dict[str, str], expected: list[str]) -> None:
    """The check can fail: fake modules importing each other round, lazily or only for the type checker, are
    reported; a package importing its own module is no cycle."""
    imports = {module: imported(source, module, module == "tickwork.store") for module, source in sources.items()}
    assert module_cycles(imports) == expected


def test_the_table_itself_has_no_cycle() -> None:
    """Rows allowing each other both ways would let a cycle in: the table must be a strict order."""
    seen: set[str] = set()

    def visit(room: str, path: tuple[str, ...]) -> None:
        assert room not in path, f"cycle in the import rule: {' -> '.join((*path, room))}"
        if room in seen:
            return
        for lower in ALLOWED[room]:
            visit(lower, (*path, room))
        seen.add(room)

    for room in ALLOWED:
        visit(room, ())
    assert not any("services" in lower for lower in ALLOWED.values())


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("tickwork.model.job", "from tickwork.store import JobStore", "(model may not import store)"),
        ("tickwork.store.jobs", "import tickwork.tick.dispatch", "(store may not import tick)"),
        ("tickwork.tick.dispatch", "from tickwork.executor import heartbeat", "(tick may not import executor)"),
        ("tickwork.aws.queues", "def f():\n    from tickwork import services", "(aws may not import services)"),
        ("tickwork.jobtypes.registry", "from ..control import api_bodies", "(jobtypes may not import control)"),
        ("tickwork.kitchen", "import json", "room 'kitchen' is not in the import rule's table"),
    ],
)
def test_the_rule_catches_an_upward_edge(module: str, source: str, expected: str) -> None:
    """The check can fail: a fake module with an edge the table forbids is reported."""
    is_package = False
    broken = upward_edges({module: imported(source, module, is_package) or {"tickwork.model.job"}}, ALLOWED)
    assert len(broken) == 1
    assert broken[0].endswith(expected)


def test_the_package_has_at_most_six_top_level_modules() -> None:
    assert len(list(PACKAGE.glob("*.py"))) <= 6


def test_every_package_is_listed_for_the_editable_install() -> None:
    """pyproject.toml lists the packages one by one (the layer copies shared/, so only the install would miss one)."""
    listed = set(tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {module_name(init, PACKAGE) for init in PACKAGE.rglob("__init__.py")}
    assert found - listed == set()


def test_every_folder_of_an_installed_package_is_listed_so_setuptools_does_not_warn() -> None:
    """A folder Python could import (its name an identifier) inside a listed package, static files too, is listed:
    else the install warns "Package ... is absent from the `packages` configuration" for each."""
    setuptools = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed, roots = set(setuptools["packages"]), setuptools["package-dir"]
    unlisted = set()
    for name, folder in roots.items():
        root = PACKAGE.parents[1] / folder
        # The repository's root is a package only for the files its package data and packages name (the stack's).
        subs = (root / "functions").rglob("*") if folder == "." else root.rglob("*")
        for sub in subs:
            parts = sub.relative_to(root).parts
            if sub.is_dir() and all(part.isidentifier() for part in parts) and "__pycache__" not in parts:
                unlisted.add(".".join((name, *parts)))
    assert unlisted - listed == set()
