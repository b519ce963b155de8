"""cfn-lint passes on template.yaml with no errors, warnings or informational findings, and on its rendering with
the private network's parameters set and on its rendering with the token API and its user pool
(tickwork_local.template_renderings), whose branches the defaults leave off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tickwork_local import template_renderings
from tickwork_local.template import REPO_ROOT

# Exactly the `cfn-lint` console script, run from the repo root so .cfnlintrc.yaml applies.
CFN_LINT = "import sys; from cfnlint.runner import main; sys.argv[0] = 'cfn-lint'; sys.exit(main())"


@pytest.fixture(scope="module")
def lint_runs(tmp_path_factory) -> dict[str, tuple[int, str]]:
    """The runs at once (each takes seconds): the repo's template, its renderings, and a broken one as a control."""
    folder = Path(tmp_path_factory.mktemp("cfn"))
    bad = folder / "bad.yaml"
    bad.write_text("Resources:\n  Q:\n    Type: AWS::SQS::Queu\n")
    commands = {"repo": [sys.executable, "-c", CFN_LINT]}
    for name in template_renderings.RENDERINGS:
        assert template_renderings.main([name, str(folder / f"{name}.json")]) == 0
        commands[name] = [sys.executable, "-c", CFN_LINT, str(folder / f"{name}.json")]
    commands["broken"] = [sys.executable, "-c", CFN_LINT, str(bad)]
    processes = {
        name: subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, command in commands.items()
    }
    outputs = {name: p.communicate(timeout=120)[0] for name, p in processes.items()}
    return {name: (processes[name].returncode, output) for name, output in outputs.items()}


@pytest.mark.parametrize("rendering", ["repo", *template_renderings.RENDERINGS])
def test_cfn_lint_reports_nothing(lint_runs, rendering):
    returncode, output = lint_runs[rendering]
    assert output == ""
    assert returncode == 0


def test_cfn_lint_does_catch_a_broken_template(lint_runs):
    """The lint test is not vacuous: the same invocation fails on a typo'd resource type."""
    returncode, output = lint_runs["broken"]
    assert returncode != 0
    assert "E3006" in output
