"""docs/jobs-as-code.md's examples, as its tests read and run them: the blocks after a marker comment, and a
console block's `$ tickwork ...` commands, each run in process and printing what the page shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[2] / "docs" / "jobs-as-code.md"


def marked_blocks(marker: str) -> list[tuple[str, str]]:
    """Each fenced block right after `marker`: its language and its text."""
    return re.findall(re.escape(marker) + r"\n```(\w+)\n(.*?)\n```", DOCS.read_text(encoding="utf-8"), re.S)


def run_console(cli: Any, console: str, *, steps: int) -> None:
    """Each `$ tickwork ...` of `console` (there are `steps`), its output the lines below it."""
    commands = re.split(r"^\$ ", console, flags=re.M)[1:]
    assert len(commands) == steps
    for step in commands:
        command, *shown = step.strip("\n").split("\n")
        argv = shlex.split(command)
        assert argv[0] == "tickwork"
        result = cli(*argv[1:], output=None)
        assert result.stdout.splitlines() == shown, command
