"""checkov, the IaC security scanner, passes on template.yaml; every check the template skips says why.

checkov pins its own boto3, so it lives in a venv of its own (`make checkov` builds .venv-checkov and
`make test` runs it on the template before pytest). These tests run it too where it is installed, with a
broken template as a control, so the scan cannot pass by not scanning.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tickwork_local.stack import template_renderings
from tickwork_local.stack.template import REPO_ROOT

CHECKOV = os.environ.get("CHECKOV") or str(REPO_ROOT / ".venv-checkov" / "bin" / "checkov")


def _skips(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, skip)
        for name, resource in template["Resources"].items()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    ]


def test_every_skipped_check_names_its_reason(template):
    skips = _skips(template)
    assert len(skips) >= 20  # the SQS/SSE, log-group, function and table skips
    for name, skip in skips:
        assert skip["id"].startswith("CKV_"), name
        assert len(skip.get("comment", "")) > 30, f"{name} skips {skip['id']} without a reason"


def test_skips_are_per_resource_never_global():
    """A skip for the whole file would hide the next resource's failure; only resource Metadata skips."""
    config = REPO_ROOT / ".checkov.yaml"
    assert not config.exists() or "skip-check" not in config.read_text()


def _scan(*paths: Path) -> tuple[int, dict[str, Any]]:
    """checkov's exit code and its JSON report of these files (one report: they are all CloudFormation)."""
    files = [str(path) for path in paths]
    command = [CHECKOV, "-f", *files, "--framework", "cloudformation", "--output", "json", "--skip-download"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=REPO_ROOT)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(result.stdout + result.stderr) from None
    return result.returncode, report


@pytest.mark.skipif(not shutil.which(CHECKOV), reason="checkov not installed here; `make test` installs and runs it")
def test_checkov_passes_on_the_template_and_its_renderings_and_fails_on_an_open_bucket(tmp_path):
    # One run scans them all (each run spends about 20 s of CPU, most of it starting): the template as it is, with
    # the private network's parameters set, whose resources and VpcConfig the defaults leave off, and with the token
    # API and the hosted console, with its user pool (CreateUserPool) and with an issuer of your own; and a control,
    # an open bucket, that must fail.
    renderings = [tmp_path / f"{name}.json" for name in template_renderings.RENDERINGS]
    for rendering in renderings:
        assert template_renderings.main([rendering.stem, str(rendering)]) == 0
    control = tmp_path / "open.yaml"
    control.write_text("Resources:\n  Open:\n    Type: AWS::S3::Bucket\n    Properties: {}\n")
    returncode, report = _scan(REPO_ROOT / "template.yaml", *renderings, control)

    assert returncode != 0  # the control's failures
    failed = report["results"]["failed_checks"]
    assert {Path(check["file_path"]).name for check in failed} == {control.name}, [
        (check["file_path"], check["check_id"], check["resource"])
        for check in failed
        if control.name not in check["file_path"]
    ]
    assert "CKV_AWS_53" in {check["check_id"] for check in failed}  # public ACLs not blocked
    assert report["summary"]["parsing_errors"] == 0  # a file checkov cannot read passes, silently
    scanned = {Path(check["file_path"]).name for check in report["results"]["passed_checks"]}
    assert scanned == {"template.yaml", control.name} | {r.name for r in renderings}  # every file was scanned
