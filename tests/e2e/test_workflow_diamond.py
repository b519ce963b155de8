"""Workflows on one `tickwork dev` node, driven over HTTP (and the CLI) as a user would: a diamond whose failing
branch skips its downstream step and is handled by an alert step, results passed downstream, step runs read as
ordinary runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Api, Node, cli, wait_for
from tests.e2e.test_local_runtime import at

pytestmark = pytest.mark.e2e

FINISHED = {"SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED"}
FAST_RETRY = {"max_attempts": 2, "backoff_seconds": 1, "max_backoff_seconds": 2}

# a -> b, a -> c, b + c -> d; c fails, so d is skipped; alert (one_failed on b, c, d) handles the failure.
DIAMOND_WITH_ALERT: list[dict[str, Any]] = [
    {"id": "a", "type": "echo", "payload": {"rows": 42, "source": "extract"}},
    {"id": "b", "type": "echo", "depends_on": ["a"], "payload": {"rows_from_a": {"$from": "steps.a.result.rows"}}},
    {"id": "c", "type": "echo", "depends_on": ["a"], "payload": {"fail_attempts": 99}, "retry": {"max_attempts": 1}},
    {"id": "d", "type": "echo", "depends_on": ["b", "c"]},
    {
        "id": "alert",
        "type": "echo",
        "depends_on": ["b", "c", "d"],
        "trigger_rule": "one_failed",
        "payload": {"alert": "a branch failed"},
    },
]


def finished_run(api: Api, workflow_id: str) -> dict[str, Any] | None:
    runs = api.get(f"/v1/workflows/{workflow_id}/runs")["items"]
    return runs[0] if len(runs) == 1 and runs[0]["status"] in FINISHED else None


def test_a_diamond_with_a_failing_branch_and_an_alert_step(node: Node) -> None:
    api = node.api
    workflow = api.post(
        "/v1/workflows",
        {"name": "e2e-diamond", "schedule": {"at": at(2)}, "steps": DIAMOND_WITH_ALERT, "retry": FAST_RETRY},
        expect=201,
    )
    try:
        listed = wait_for(lambda: finished_run(api, workflow["id"]), 60, 0.5, "the workflow run to finish")
        # The listing shows each step as the run's map records it; the run itself reads its steps' runs.
        run = api.get(f"/v1/workflow-runs/{listed['id']}")
        assert (run["status"], run["id"]) == (listed["status"], listed["id"])
        # Its one occurrence, at the instant the schedule said: the run's id is deterministic.
        assert run["trigger"] == "schedule"
        assert run["id"].startswith(f"{workflow['id']}.")
        assert run["scheduled_for"] == workflow["schedule"]["at"]

        steps = {sid: (step["status"], step["skip_reason"]) for sid, step in run["steps"].items()}
        assert steps == {
            "a": ("SUCCEEDED", None),
            "b": ("SUCCEEDED", None),
            "c": ("FAILED", None),
            "d": ("SKIPPED", "upstream_failed"),
            "alert": ("SUCCEEDED", None),
        }, run
        # The failure reached no leaf unhandled: the only leaf, alert, ran and succeeded.
        assert run["status"] == "SUCCEEDED", run
        assert run["finished_at"] is not None
        assert run["steps"]["d"]["run_id"] is None
        assert run["steps"]["c"]["attempts"] == 1  # the step's own retry policy: one attempt

        # Step runs are ordinary runs: b's payload took a's result, and its result is in S3.
        b_run_id = run["steps"]["b"]["run_id"]
        assert b_run_id == f"{run['id']}.s-b"
        b_run = api.get(f"/v1/runs/{b_run_id}")
        assert (b_run["workflow_run_id"], b_run["step_id"], b_run["job_id"]) == (run["id"], "b", workflow["id"])
        assert b_run["payload"] == {"rows_from_a": 42}
        assert api.get(f"/v1/runs/{b_run_id}/result") == {"rows_from_a": 42}
        assert api.get(f"/v1/runs/{run['steps']['a']['run_id']}/result") == {"rows": 42, "source": "extract"}
        c_run = api.get(f"/v1/runs/{run['steps']['c']['run_id']}")
        assert c_run["status"] == "FAILED"
        assert c_run["error"]["type"] == "EchoFailure"

        one = api.get(f"/v1/workflow-runs/{run['id']}")
        assert (one["status"], {sid: step["status"] for sid, step in one["steps"].items()}) == (
            "SUCCEEDED",
            {sid: status for sid, (status, _) in steps.items()},
        )
        assert api.get(f"/v1/workflows/{workflow['id']}")["state"] == "COMPLETED"  # a one-shot schedule
    finally:
        api.call("DELETE", f"/v1/workflows/{workflow['id']}", expect=(200, 409))


def test_the_workflow_commands_of_the_docs(node: Node, tmp_path) -> None:
    """docs/workflows.md's commands: create from a file, trigger, wait for the run, read a step's result."""

    def tickwork(*args: str) -> Any:
        return cli(node, *args, timeout=90)

    definition = tmp_path / "workflow.json"
    steps = [
        {"id": "extract", "type": "echo", "payload": {"rows": 7}},
        {
            "id": "transform",
            "type": "echo",
            "depends_on": ["extract"],
            "payload": {"rows": {"$from": "steps.extract.result.rows"}},
        },
        {"id": "load", "type": "echo", "depends_on": ["transform"], "condition": "steps.transform.result.rows > `0`"},
    ]
    definition.write_text(json.dumps({"name": "e2e-cli", "schedule": {"rate": "1 day"}, "steps": steps}))
    workflow = tickwork("workflows", "create", "--file", str(definition))
    try:
        started = tickwork("workflows", "trigger", workflow["id"])
        assert started["status"] == "RUNNING"
        page = tickwork("workflows", "runs", workflow["id"], "--wait", "--wait-timeout", "60")
        (run,) = page["items"]
        assert run["id"] == started["id"]
        assert run["status"] == "SUCCEEDED", run
        assert [s["status"] for s in run["steps"].values()] == ["SUCCEEDED"] * 3
        assert tickwork("runs", "result", run["steps"]["transform"]["run_id"]) == {"rows": 7}
    finally:
        node.api.call("DELETE", f"/v1/workflows/{workflow['id']}", expect=(200, 409))
