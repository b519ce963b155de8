"""The floor plan's one import rule: which of shared/tickwork's rooms may import which (README, "Where things live").

Each room is a package of shared/tickwork, or one of its top-level modules. A room imports only the rooms its row
allows; every edge points down, so no import goes upward and the rooms have no cycle. Every import counts, a lazy
one inside a function or one under TYPE_CHECKING too: a reader follows it all the same.
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


def imported(source: str, module: str, is_package: bool) -> set[str]:
    """The tickwork modules (or packages) one module's source imports, relative imports resolved."""
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
            # `from tickwork import faults` imports the module tickwork.faults, not the package tickwork.
            found |= {f"{target}.{alias.name}" for alias in node.names} if target == "tickwork" else {target}
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


def tickwork_imports() -> dict[str, set[str]]:
    return {
        module_name(path, PACKAGE): imported(path.read_text(), module_name(path, PACKAGE), path.name == "__init__.py")
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_every_import_between_the_rooms_points_down() -> None:
    assert upward_edges(tickwork_imports(), ALLOWED) == []


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
