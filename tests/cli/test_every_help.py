"""Every command's --help, walked from the `tickwork` app: a flag shows no value placeholder (`--all <bool>`
read as if the flag took a value)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from typer.main import get_command
from typer.testing import CliRunner


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        yield (*path, name)
        if hasattr(command, "commands"):  # a group
            yield from _commands(command, (*path, name))


def test_no_help_shows_a_bool_placeholder_for_a_flag():
    from tickwork_cli.main import app

    commands = list(_commands(get_command(app)))
    assert ("runs", "watch") in commands
    runner = CliRunner()
    shown_with_a_placeholder = []
    for argv in [(), *commands]:
        shown = runner.invoke(app, [*argv, "--help"], terminal_width=200)
        assert shown.exit_code == 0, (argv, shown.output)
        assert "--help" in shown.stdout, argv
        if "<bool>" in shown.stdout:
            shown_with_a_placeholder.append(" ".join(argv))
    assert shown_with_a_placeholder == []


def test_a_flag_still_shows_its_help_and_an_option_its_type():
    from tickwork_cli.main import app

    shown = CliRunner().invoke(app, ["runs", "list", "--help"], terminal_width=200).stdout
    (wait,) = [line for line in shown.splitlines() if "--wait " in line]
    assert "Poll until" in wait
    (timeout,) = [line for line in shown.splitlines() if "--wait-timeout" in line]
    assert "<float>" in timeout
