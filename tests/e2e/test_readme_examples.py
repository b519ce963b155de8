"""The README's quick-start examples, run as written against `tickwork dev`: the blocks marked
`<!-- example: run as written ... -->` in README.md, in order, each `$ ` line a command in a second terminal
(tests/e2e/doc_examples.py says what is not as written, and how shown output is compared)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ROOT, Node
from tests.e2e.doc_examples import PAGE_URL, Step, marked_examples, run_steps

pytestmark = pytest.mark.e2e

MARKER = "<!-- example: run as written against `tickwork dev` by tests/e2e/test_readme_examples.py -->"


def readme_examples() -> list[Step]:
    return [step for block in marked_examples(ROOT / "README.md", MARKER) for step in block]


def test_the_readme_marks_its_quick_start_examples():
    commands = [step.command for step in readme_examples()]
    assert [c.split()[:3] for c in commands] == [
        ["export", f"TICKWORK_API_URL={PAGE_URL}"],
        [".venv/bin/tickwork", "jobs", "create"],
        [".venv/bin/tickwork", "runs", "list"],
        [".venv/bin/tickwork", "runs", "result"],
    ]


def test_the_readme_quick_start_runs_as_written(node: Node) -> None:
    placeholders: dict[str, str] = {}
    run_steps(readme_examples(), node.api.url, placeholders)
    assert set(placeholders) == {"<job id>", "<run id>"}
    (run,) = node.api.runs(placeholders["<job id>"])
    assert run["status"] == "SUCCEEDED"
