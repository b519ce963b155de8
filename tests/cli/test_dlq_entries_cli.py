"""`tickwork dlq`: the listing says whether each entry can be retried; a redrive that leaves a run says why and
exits non-zero; `dlq dismiss` takes an entry out, and again is no error."""

from __future__ import annotations

import json

from tests.api.test_dlq_dismiss import SAGA


def compensated_step_run(cli, tmp_path) -> str:
    path = tmp_path / "saga.json"
    path.write_text(json.dumps(SAGA))
    workflow = cli.json("workflows", "create", "--file", str(path))
    started = cli.json("workflows", "trigger", workflow["id"])
    cli.pipeline.drain()
    run = cli.json("workflows", "get-run", started["id"])
    assert run["status"] == "COMPENSATED"
    return run["steps"]["b"]["run_id"]


def test_dlq_redrive_of_a_run_it_cannot_retry_exits_non_zero_with_the_reason(cli, tmp_path):
    """The defect: `dlq redrive <step run>` of a COMPENSATED workflow run answered `not_redriven`, exit 0, no
    reason."""
    step_run = compensated_step_run(cli, tmp_path)
    result = cli("dlq", "redrive", step_run, output="table")
    assert result.exit_code == 1
    assert result.stdout.startswith("redriven: 0")
    assert f"not redriven: {step_run}: workflow_run_not_failed: " in result.stderr
    assert "COMPENSATED" in result.stderr

    as_json = cli("dlq", "redrive", step_run)
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["refused"][0]["reason"] == "workflow_run_not_failed"


def test_dlq_list_says_why_an_entry_cannot_be_retried_and_dismiss_takes_it_out(cli, tmp_path):
    step_run = compensated_step_run(cli, tmp_path)
    table = cli("dlq", "list", output="table")
    assert table.stdout.splitlines()[0].split()[-1] == "RETRY"
    (row,) = [line for line in table.stdout.splitlines() if line.startswith(step_run)]
    assert row.split()[-1] == "workflow_run_not_failed"

    refused = cli("runs", "retry", step_run, output="table")
    assert refused.exit_code == 1
    assert "reason: workflow_run_not_failed" in refused.stderr

    dismissed = cli.json("dlq", "dismiss", step_run)
    assert (dismissed["status"], dismissed["dismissed_at"] is not None) == ("FAILED", True)
    assert cli.json("dlq", "dismiss", step_run) == dismissed  # idempotent
    assert cli.json("dlq", "list")["items"] == []
    assert cli.json("runs", "get", step_run)["status"] == "FAILED"  # its record kept


def test_dlq_dismiss_of_an_unknown_run_exits_1_naming_it(cli):
    unknown = "j" + "0" * 25 + ".1795262400000"
    result = cli("dlq", "dismiss", unknown, output="table")
    assert result.exit_code == 1
    assert "Not found" in result.stderr


def test_runs_retry_with_a_payload_reruns_it_with_that_payload(cli, tmp_path):
    job = cli.json("jobs", "create", "--name", "f", "--type", "echo", "--rate", "1 hour", "--payload", '{"fail_attempts": 9}', "--max-attempts", "1")  # fmt: skip
    run = cli.json("jobs", "trigger", job["id"])
    cli.pipeline.drain()
    retried = cli.json("runs", "retry", run["id"], "--payload", '{"fixed": 1}')
    assert (retried["status"], retried["payload"], retried["payload_edited_by"]) == ("QUEUED", {"fixed": 1}, "default")
    cli.pipeline.drain()
    assert cli.json("runs", "get", run["id"])["status"] == "SUCCEEDED"

    bad = cli("jobs", "trigger", job["id"])  # a second run, FAILED
    second = json.loads(bad.stdout)
    cli.pipeline.drain()
    path = tmp_path / "payload.json"
    path.write_text('{"fail_attempts": "never"}')
    refused = cli("runs", "retry", second["id"], "--payload-file", str(path), output="table")
    assert refused.exit_code == 1
    assert "payload.fail_attempts" in refused.stderr
    assert cli.json("runs", "get", second["id"])["status"] == "FAILED"
    both = cli("runs", "retry", second["id"], "--payload", "{}", "--payload-file", str(path), output="table")
    assert both.exit_code == 2
