"""The README's quick-start examples, run as written against `tickwork dev`: the blocks marked
`<!-- example: run as written ... -->` in README.md, in order, each `$ ` line a command in a second terminal.

What is not as written: the runtime's port (a free one, not 3000), `.venv/bin/` (this interpreter's scripts), and
the placeholders a reader fills in from earlier output (`<job id>` from the create, `<run id>` from the listing).
Lines after a command that are not commands are its output as the README shows it: JSON there is compared as JSON.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.e2e.conftest import BIN, ROOT, Node

pytestmark = pytest.mark.e2e

MARKER = "<!-- example: run as written against `tickwork dev` by tests/e2e/test_readme_examples.py -->"
README_URL = "http://127.0.0.1:3000"
_BLOCK = re.compile(re.escape(MARKER) + r"\n```console\n(?P<body>.*?)\n```", re.DOTALL)


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)  # the output the README shows for it


def readme_examples() -> list[Step]:
    steps: list[Step] = []
    for block in _BLOCK.finditer((ROOT / "README.md").read_text(encoding="utf-8")):
        for line in block.group("body").splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:]))
            else:
                steps[-1].shown.append(line)
    return steps


def _learn(placeholders: dict[str, str], output: Any) -> None:
    """What a reader copies from an answer: a job's id, or the first run listed."""
    if isinstance(output, dict) and "id" in output and "<job id>" not in placeholders:
        placeholders["<job id>"] = output["id"]
    if isinstance(output, dict) and output.get("items"):
        placeholders["<run id>"] = output["items"][0]["id"]


def test_the_readme_marks_its_quick_start_examples():
    commands = [step.command for step in readme_examples()]
    assert [c.split()[:3] for c in commands] == [
        ["export", f"TICKWORK_API_URL={README_URL}"],
        [".venv/bin/tickwork", "jobs", "create"],
        [".venv/bin/tickwork", "runs", "list"],
        [".venv/bin/tickwork", "runs", "result"],
    ]


def test_the_readme_quick_start_runs_as_written(node: Node) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_API_URL"}
    placeholders: dict[str, str] = {}
    for step in readme_examples():
        command = step.command.replace(README_URL, node.api.url).replace(".venv/bin/", f"{BIN}/")
        for placeholder, value in placeholders.items():
            command = command.replace(placeholder, value)
        assert "<" not in command, f"an unfilled placeholder in {step.command!r}"
        if command.startswith("export "):
            name, _, value = shlex.split(command)[1].partition("=")
            env[name] = value
            continue
        done = subprocess.run(
            command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=150, check=False
        )
        assert done.returncode == 0, f"{step.command}\n{done.stdout}\n{done.stderr}"
        output = json.loads(done.stdout)  # not a terminal: the CLI answers JSON
        _learn(placeholders, output)
        if step.shown:
            assert output == json.loads("\n".join(step.shown)), step.command
    assert set(placeholders) == {"<job id>", "<run id>"}
    (run,) = node.api.runs(placeholders["<job id>"])
    assert run["status"] == "SUCCEEDED"
