"""`tickwork workflows ...` against the real API handler (typer's runner; the HTTP hop replaced by an in-process
transport), the pipeline running whenever the CLI waits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.test_workflow_routes import DIAMOND
from tests.conftest import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.fixture
def workflow_file(tmp_path):
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(DIAMOND))
    return path


def _create(cli, workflow_file) -> dict[str, Any]:
    return cli.json("workflows", "create", "--file", str(workflow_file))


def test_create_from_a_file_then_get_and_list(cli, workflow_file):
    workflow = _create(cli, workflow_file)
    assert workflow["id"].startswith("w")
    assert workflow["name"] == "diamond"
    assert [s["id"] for s in workflow["steps"]] == ["a", "b", "c", "d"]
    assert workflow["next_run_at"] == "2026-11-22T01:00:00.000Z"
    assert cli.json("workflows", "get", workflow["id"]) == workflow
    assert cli.json("workflows", "list")["items"] == [workflow]

    shown = cli("workflows", "get", workflow["id"], output="table")
    assert shown.exit_code == 0, shown.stderr
    assert "a; b <- a; c <- a; d <- b, c" in shown.stdout
    table = cli("workflows", "list", output="table")
    assert table.stdout.splitlines()[0].split() == ["ID", "NAME", "STATE", "STEPS", "SCHEDULE", "NEXT", "RUN"]
    assert workflow["id"] in table.stdout
    assert "cron 0 2 * * * (Europe/Paris)" in table.stdout


def test_create_reads_stdin(cli):
    from tickwork_cli.main import app

    result = cli.runner.invoke(
        app, ["workflows", "create", "--file", "-", "--api-url", cli.url, "--output", "json"], input=json.dumps(DIAMOND)
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["name"] == "diamond"


def test_list_filters(cli, workflow_file, tmp_path):
    first = _create(cli, workflow_file)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**DIAMOND, "name": "report"}))
    cli.pipeline.clock.advance(0.001)
    second = cli.json("workflows", "create", "--file", str(other))
    cli.json("workflows", "pause", first["id"])
    assert [w["id"] for w in cli.json("workflows", "list", "--state", "PAUSED")["items"]] == [first["id"]]
    assert [w["id"] for w in cli.json("workflows", "list", "--name-prefix", "rep")["items"]] == [second["id"]]
    every = cli.json("workflows", "list", "--limit", "1", "--all")
    assert [w["id"] for w in every["items"]] == [second["id"], first["id"]]


def test_lifecycle_commands(cli, workflow_file):
    workflow = _create(cli, workflow_file)
    assert cli.json("workflows", "pause", workflow["id"])["state"] == "PAUSED"
    assert cli.json("workflows", "resume", workflow["id"])["state"] == "ACTIVE"
    assert cli.json("workflows", "cancel", workflow["id"])["state"] == "CANCELLED"
    again = cli("workflows", "resume", workflow["id"])
    assert again.exit_code == 1
    assert "Error 409 Conflict" in again.stderr


def test_trigger_then_wait_for_the_run_and_read_its_steps(cli, workflow_file):
    workflow = _create(cli, workflow_file)
    run = cli.json("workflows", "trigger", workflow["id"])
    assert run["status"] == "RUNNING"
    assert run["steps"]["a"]["status"] == "QUEUED"
    # --wait polls; meanwhile (in the test, each poll's sleep) time passes and the scheduler works.
    waited = cli(
        "workflow-runs", "list", workflow["id"], "--wait", "--interval", "1", "--wait-timeout", "30", output="table"
    )
    assert waited.exit_code == 0, waited.output
    assert "waiting: RUNNING" in waited.stderr
    header, line = waited.stdout.splitlines()[:2]
    assert header.split()[:2] == ["ID", "STATUS"]
    assert line.split()[:2] == [run["id"], "SUCCEEDED"]
    assert "a SUCCEEDED; b SUCCEEDED; c SUCCEEDED; d SUCCEEDED" in line

    finished = cli.json("workflow-runs", "get", run["id"])
    assert finished["status"] == "SUCCEEDED"
    b_run = finished["steps"]["b"]["run_id"]
    assert cli.json("runs", "get", b_run)["payload"] == {"from_a": 3}
    result = cli("runs", "result", b_run)
    assert json.loads(result.stdout) == {"from_a": 3}
    succeeded = cli.json("workflow-runs", "list", workflow["id"], "--status", "SUCCEEDED")["items"]
    assert [r["id"] for r in succeeded] == [run["id"]]

    conflict = cli("workflow-runs", "retry", run["id"])
    assert conflict.exit_code == 1
    assert "Error 409 Conflict" in conflict.stderr
    assert cli("workflow-runs", "cancel", run["id"]).exit_code == 1


def test_cancel_run(cli, workflow_file):
    workflow = _create(cli, workflow_file)
    run = cli.json("workflows", "trigger", workflow["id"])
    cancelled = cli.json("workflow-runs", "cancel", run["id"])
    assert cancelled["status"] == "CANCELLED"
    d = cancelled["steps"]["d"]
    assert (d["status"], d["skip_reason"]) == ("SKIPPED", "cancelled")


def test_a_bad_definition_is_printed_naming_the_field(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**DIAMOND, "steps": [{"id": "a", "type": "echo", "depends_on": ["nope"]}]}))
    result = cli("workflows", "create", "--file", str(bad))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "Error 422 Invalid input"
    assert "steps[0].depends_on[0]" in result.stderr
    assert "unknown step 'nope'" in result.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [("{oops", "--file: not valid JSON"), ("[1, 2]", "must hold a JSON object"), (None, "--file: cannot read")],
)
def test_a_file_that_is_no_workflow_is_a_usage_error_without_calling_the_api(cli, tmp_path, content, message):
    path = tmp_path / "workflow.json"
    if content is not None:
        path.write_text(content)
    result = cli("workflows", "create", "--file", str(path))
    assert result.exit_code == 2
    assert message in result.stderr
    assert cli.transport.sent == []


def test_workflow_commands_keep_the_shared_options_in_their_place():
    from tickwork_cli.main import app
    from typer.main import get_command

    session_tail = ["--output", "--api-key", "--profile", "--region", "--token"]
    commands = get_command(app).commands["workflows"].commands  # type: ignore[attr-defined]
    assert set(commands) == {
        "create", "update", "list", "get", "pause", "resume", "cancel", "trigger", "runs", "get-run", "cancel-run",
        "retry-run", "show-run",  # hidden: the old verbs of workflow-runs list, get, cancel, retry
    }  # fmt: skip
    assert set(get_command(app).commands["workflow-runs"].commands) == {"list", "get", "cancel", "retry"}  # type: ignore[attr-defined]
    for name, command in commands.items():
        flags = [p.opts[0] for p in command.params if p.param_type_name == "option"]
        assert flags[-5:] == session_tail, (name, flags)
        assert flags.count("--api-url") == 1, (name, flags)
    assert commands["get-run"].params[0].name == "workflow_run_id"
    for name, command in get_command(app).commands["workflow-runs"].commands.items():  # type: ignore[attr-defined]
        flags = [p.opts[0] for p in command.params if p.param_type_name == "option"]
        assert flags[-5:] == session_tail, (name, flags)
    assert commands["get"].params[0].name == "workflow_id"


def test_show_run_lists_the_compensations_of_a_failed_trip_in_the_order_they_ran(cli):
    trip = str(ROOT / "examples" / "workflows" / "book-trip.json")
    workflow = cli.json("workflows", "create", "--file", trip)
    run = cli.json("workflows", "trigger", workflow["id"])
    waited = cli("workflow-runs", "list", workflow["id"], "--wait", "--interval", "1", "--wait-timeout", "30")
    assert waited.exit_code == 7, waited.output  # COMPENSATED
    for command in (["workflow-runs", "get"], ["workflows", "get-run"], ["workflows", "show-run"]):
        shown = cli(*command, run["id"], output="table")
        assert shown.exit_code == 0, shown.stderr
        rows = {line.split()[0]: line.split(None, 1)[1] for line in shown.stdout.splitlines()[1:] if line.strip()}
        assert rows["status"] == "COMPENSATED"
        assert rows["compensating_for"] == "FAILED"
        assert rows["compensations"] == "reserve_hotel SUCCEEDED; reserve_flight SUCCEEDED"
    undo = cli.json("workflow-runs", "get", run["id"])["compensations"]["reserve_flight"]
    assert json.loads(cli("runs", "result", undo["run_id"]).stdout) == {"cancel": "FL-1042"}


def test_cancel_run_may_ask_for_compensation(cli, workflow_file):
    workflow = _create(cli, workflow_file)
    run = cli.json("workflows", "trigger", workflow["id"])
    cancelled = cli.json("workflow-runs", "cancel", run["id"], "--compensate")
    # Nothing has run yet: nothing to compensate once a's queued run is skipped.
    assert (cancelled["status"], cancelled["compensating_for"]) == ("COMPENSATING", "CANCELLED")
