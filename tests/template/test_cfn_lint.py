"""cfn-lint passes on template.yaml with no errors, warnings or informational findings, and on its rendering with
the private network's parameters set and on its rendering with the token API and its user pool
(tickwork_local.stack.template_renderings), whose branches the defaults leave off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tickwork_local.stack import template_renderings
from tickwork_local.stack.template import REPO_ROOT

# Exactly the `cfn-lint` console script, run from the repo root so .cfnlintrc.yaml applies.
CFN_LINT = "import sys; from cfnlint.runner import main; sys.argv[0] = 'cfn-lint'; sys.exit(main())"


@pytest.fixture(scope="module")
def lint_runs(tmp_path_factory) -> dict[str, tuple[int, str]]:
    """Two runs at once (each template takes seconds): `cfn-lint` as configured (the repo's template), and one run of
    its renderings with a broken template as a control, each file's findings read from the parseable output."""
    folder = Path(tmp_path_factory.mktemp("cfn"))
    bad = folder / "bad.yaml"
    bad.write_text("Resources:\n  Q:\n    Type: AWS::SQS::Queu\n")
    files = {"broken": bad}
    for name in template_renderings.RENDERINGS:
        files[name] = folder / f"{name}.json"
        assert template_renderings.main([name, str(files[name])]) == 0
    repo = [sys.executable, "-c", CFN_LINT]
    rest = [*repo, "--include-checks", "I", "--format", "parseable", "--", *map(str, files.values())]
    processes = [
        subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for command in (repo, rest)
    ]
    (repo_output, rest_output) = (p.communicate(timeout=300)[0] for p in processes)
    lines = rest_output.splitlines()
    unattributed = [line for line in lines if not any(line.startswith(f"{path}:") for path in files.values())]
    assert unattributed == [], rest_output  # a crash or a file it could not read
    runs = {"repo": (processes[0].returncode, repo_output)}
    for name, path in files.items():
        found = "\n".join(line for line in lines if line.startswith(f"{path}:"))
        runs[name] = (processes[1].returncode if found else 0, found)
    return runs


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
