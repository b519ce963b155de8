"""cfn-lint passes on template.yaml with no errors, warnings or informational findings."""

from __future__ import annotations

import subprocess
import sys

from tickwork_local.template import REPO_ROOT

# Exactly the `cfn-lint` console script, run from the repo root so .cfnlintrc.yaml applies.
CFN_LINT = "import sys; from cfnlint.runner import main; sys.argv[0] = 'cfn-lint'; sys.exit(main())"


def test_cfn_lint_reports_nothing():
    result = subprocess.run(
        [sys.executable, "-c", CFN_LINT], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.stdout + result.stderr == ""
    assert result.returncode == 0


def test_cfn_lint_does_catch_a_broken_template(tmp_path):
    """The lint test is not vacuous: the same invocation fails on a typo'd resource type."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("Resources:\n  Q:\n    Type: AWS::SQS::Queu\n")
    result = subprocess.run(
        [sys.executable, "-c", CFN_LINT, str(bad)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "E3006" in result.stdout
