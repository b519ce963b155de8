"""`tickwork smoke` against `tickwork dev` over HTTP, as a user runs it after a deploy: it passes, and leaves no job
scheduled."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.e2e.conftest import BIN, Node

pytestmark = pytest.mark.e2e


def test_smoke_passes_against_the_local_runtime_and_leaves_nothing_scheduled(node: Node) -> None:
    done = subprocess.run(
        [str(BIN / "tickwork"), "smoke", "--api-url", node.api.url + "/", "--timeout", "60"],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "TICKWORK_API_URL"},
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith(f"PASS: {node.api.url} ran a job end to end in ")
    (job,) = node.api.get("/v1/jobs?name_prefix=tickwork-smoke-")["items"]
    assert job["state"] in ("COMPLETED", "CANCELLED")
    (run,) = node.api.runs(job["id"])
    assert run["status"] == "SUCCEEDED"
    assert node.api.get(f"/v1/runs/{run['id']}/result") == job["payload"]
