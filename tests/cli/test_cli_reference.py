"""docs/api.md's CLI reference lists every `tickwork` command the CLI lists, and no other; each flag it shows
for a command is one of that command's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from typer.main import get_command

from tests.conftest import ROOT


def _listed(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command `--help` lists (hidden ones are not), with its click command."""
    for name, command in group.commands.items():
        if command.hidden:
            continue
        if hasattr(command, "commands"):  # a group
            yield from _listed(command, (*path, name))
        else:
            yield (*path, name), command


def _reference() -> list[str]:
    """The CLI reference's command lines, each with its continuation lines, comments left out."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    block = text.split("### The `tickwork` CLI", 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    entries: list[str] = []
    for line in block.splitlines():
        code = line.split("#", 1)[0].rstrip()
        if line.startswith("tickwork "):
            entries.append(code)
        elif code.strip():
            entries[-1] += " " + code.strip()
    return entries


def _documented(groups: set[str]) -> Iterator[tuple[tuple[str, ...], str]]:
    for entry in _reference():
        words = entry.split()
        if words[1] in groups:
            for verb in words[2].split("|"):
                yield (words[1], verb), entry
        else:
            yield (words[1],), entry


def test_the_cli_reference_lists_every_command_and_only_those():
    from tickwork_cli.main import app

    commands = dict(_listed(get_command(app)))
    groups = {path[0] for path in commands if len(path) == 2}
    documented = dict(_documented(groups))
    assert sorted(" ".join(p) for p in commands if p not in documented) == [], "commands docs/api.md leaves out"
    assert sorted(" ".join(p) for p in documented if p not in commands) == [], "docs/api.md's commands that are not"
    wrong_flags = []
    for path, entry in documented.items():
        known = {opt for param in commands[path].params for opt in param.opts}
        wrong_flags += [
            f"{' '.join(path)} {flag}" for flag in re.findall(r"--[a-z][a-z-]*", entry) if flag not in known
        ]
    assert wrong_flags == [], "flags docs/api.md shows that the command does not take"
