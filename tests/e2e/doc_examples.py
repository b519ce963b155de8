"""A page's marked examples, run as a reader runs them in a second terminal beside `tickwork dev`.

A marked block is a ```console block right after its page's marker line. Each `$ ` line is a command, run from the
repo's root with `.venv/bin` first on PATH (as `source .venv/bin/activate` does); the lines after it are its output
as the page shows it. What is not as written: the runtime's URL (a free port, not 3000), `.venv/bin/` (this
interpreter's scripts), and the placeholders a reader fills in from earlier output (`<job id>`, `<run id>`,
`<workflow id>`, `<workflow run id>`, `<calendar id>`, `<freeze id>`: the latest such id any output showed).

Shown output is compared with what the command printed:
- JSON is compared as JSON, and the command runs as a script would (not a terminal, so the CLI answers JSON);
- anything else is what a terminal shows (the command runs on a pseudo-terminal, so the CLI prints tables): each
  shown line, ids, instants and numbers aside, must be one of the printed lines, in order (`...` stands for lines left out).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.conftest import BIN, ROOT

PAGE_URL = "http://127.0.0.1:3000"
COMMAND_SECONDS = 150

# The ids a reader copies from one answer into the next command, most specific first.
ID_PATTERNS = {
    "<workflow run id>": re.compile(r"\bw[0-9a-z]{25}\.\d{13}(?:\.m)?"),
    "<workflow id>": re.compile(r"\bw[0-9a-z]{25}\b(?!\.\d)"),
    "<run id>": re.compile(r"\bj[0-9a-z]{25}\.\d{13}(?:\.m)?"),
    "<job id>": re.compile(r"\bj[0-9a-z]{25}\b(?!\.\d)"),
    "<calendar id>": re.compile(r"\bc[0-9a-z]{25}\b"),
    "<freeze id>": re.compile(r"\bf[0-9a-z]{25}\b"),
}
_INSTANT = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)  # the output the page shows for it

    def shown_json(self) -> Any:
        """The shown output as JSON, or None when it is not JSON (a table, or nothing)."""
        try:
            return json.loads("\n".join(self.shown)) if self.shown else None
        except json.JSONDecodeError:
            return None


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def marked_examples(page: Path, marker: str) -> list[list[Step]]:
    """Each marked block of `page`, as its steps."""
    pattern = re.compile(re.escape(marker) + r"\n```console\n(?P<body>.*?)\n```", re.DOTALL)
    blocks: list[list[Step]] = []
    for block in pattern.finditer(page.read_text(encoding="utf-8")):
        steps: list[Step] = []
        for line in block.group("body").splitlines():
            if line.startswith("$ "):
                steps.append(Step(line[2:]))
            else:
                steps[-1].shown.append(line)
        blocks.append(steps)
    return blocks


def learn_ids(placeholders: dict[str, str], output: str) -> None:
    for placeholder, pattern in ID_PATTERNS.items():
        if found := pattern.search(output):
            placeholders[placeholder] = found.group(0)


def _normalised(line: str) -> str:
    for placeholder, pattern in ID_PATTERNS.items():
        line = pattern.sub(placeholder, line)
    return " ".join(_NUMBER.sub("<n>", _INSTANT.sub("<instant>", line)).split())


def assert_shows(shown: list[str], printed: str, command: str) -> None:
    """Each shown line (ids, instants and numbers aside: they differ from run to run) is a printed line, in the
    same order."""
    remaining = iter(_normalised(line) for line in printed.splitlines())
    for line in shown:
        if line.strip() in ("", "..."):
            continue
        expected = _normalised(line)
        assert any(expected == got for got in remaining), f"{command}: the page shows {line!r}; printed:\n{printed}"


def _run_on_a_terminal(command: str, env: dict[str, str]) -> Done:
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        command, shell=True, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.PIPE
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + COMMAND_SECONDS
    try:
        while time.monotonic() < deadline:
            if not select.select([leader], [], [], 1)[0]:
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the command has exited and its terminal closed
                break
            if not data:
                break
            chunks.append(data)
        else:
            process.kill()
        assert process.stderr is not None
        stderr = process.stderr.read().decode()
        returncode = process.wait(10)
    finally:
        os.close(leader)
    return Done(returncode, b"".join(chunks).decode().replace("\r\n", "\n"), stderr)


def run_steps(steps: list[Step], api_url: str, placeholders: dict[str, str]) -> None:
    """Run the steps in order, in one shell environment (`export` carries over), filling in placeholders."""
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_API_URL"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    for step in steps:
        command = step.command.replace(PAGE_URL, api_url).replace(".venv/bin/", f"{BIN}/")
        for placeholder, value in placeholders.items():
            command = command.replace(placeholder, value)
        assert not re.search(r"<[a-z ]+>", command), f"an unfilled placeholder in {step.command!r}"
        if command.startswith("export "):
            name, _, value = command.removeprefix("export ").partition("=")
            env[name] = value
            continue
        expected = step.shown_json()
        if step.shown and expected is None:
            done = _run_on_a_terminal(command, env)
        else:
            ran = subprocess.run(
                command,
                shell=True,
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=COMMAND_SECONDS,
                check=False,
            )
            done = Done(ran.returncode, ran.stdout, ran.stderr)
        assert done.returncode == 0, f"{step.command}\n{done.stdout}\n{done.stderr}"
        if command.startswith("curl "):
            answer = json.loads(done.stdout)
            assert not (isinstance(answer, dict) and isinstance(answer.get("status"), int)), (step.command, answer)
        learn_ids(placeholders, done.stdout)
        if expected is not None:
            assert json.loads(done.stdout) == expected, step.command
        elif step.shown:
            assert_shows(step.shown, done.stderr + done.stdout, step.command)
