"""Each module of tickwork_cli.commands holds one noun's commands, is named as its command is (`workflow_runs` is
`workflow-runs`), and is registered: `tickwork --help` lists it."""

from __future__ import annotations

import importlib
import pkgutil
import re

import typer
from typer.testing import CliRunner


def command_modules() -> list[str]:
    import tickwork_cli.commands

    return sorted(module.name for module in pkgutil.iter_modules(tickwork_cli.commands.__path__))


def unlisted(app: typer.Typer, modules: list[str]) -> list[str]:
    """The modules whose command `--help` does not list."""
    shown = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    return [m for m in modules if not re.search(rf"^[│|\s]*{m.replace('_', '-')}\s", shown.stdout, re.MULTILINE)]


def test_tickwork_help_lists_every_command_module():
    from tickwork_cli.main import app

    modules = command_modules()
    assert {"jobs", "runs", "workflows", "workflow_runs", "calendars", "freezes", "dlq", "audit"} <= set(modules)
    assert unlisted(app, modules) == []


def test_the_check_finds_a_module_left_unregistered():
    app = typer.Typer()
    for name in command_modules():
        if name != "dead_letters":
            importlib.import_module(f"tickwork_cli.commands.{name}").register(app)
    assert unlisted(app, command_modules()) == ["dead_letters"]
