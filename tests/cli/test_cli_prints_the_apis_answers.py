"""The CLI calls the API through the typed client (tickwork_cli.api_client), which reads each answer into the API's
own model; `--output json` still prints the answer as the API sent it: its field names (`from`, not `from_`), the
nulls it sends and the fields it leaves out, in its order. Each command here is checked against the answer the
handler gave it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.test_dlq_dismiss import SAGA
from tests.api.test_workflow_routes import DIAMOND

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

CALENDAR = {"name": "holidays", "windows": [{"dates": ["2026-12-25"]}]}


def printed_and_answered(cli: Any, *argv: str, exit_code: int = 0) -> tuple[Any, Any]:
    """What the command printed (as JSON), and the API's last successful answer to it, as the handler sent it."""
    cli.transport.answered.clear()
    result = cli(*argv)
    assert result.exit_code == exit_code, result.output + result.stderr
    answers = [body for _, _, status, body in cli.transport.answered if 200 <= status < 300]
    return json.loads(result.stdout), json.loads(answers[-1])


def as_the_api_answered(cli: Any, *argv: str) -> Any:
    printed, answered = printed_and_answered(cli, *argv)
    assert json.dumps(printed) == json.dumps(answered), argv  # the same fields, values and order
    return printed


def items_as_the_api_answered(cli: Any, *argv: str) -> Any:
    """A listing the CLI prints as a page of its own (a preview's, the freezes'): the API's items."""
    printed, answered = printed_and_answered(cli, *argv)
    assert json.dumps(printed["items"]) == json.dumps(answered["items"]), argv
    return printed


def _file(tmp_path: Any, name: str, body: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    return str(path)


def test_jobs_and_their_runs_print_as_the_api_answered(cli):
    job = as_the_api_answered(
        cli, "jobs", "create", "--name", "logs", "--type", "echo", "--cron", "*/5 * * * *", "--tag", "team=data",
        "--payload", '{"log": ["fetched 3 rows"]}',
    )  # fmt: skip
    as_the_api_answered(cli, "jobs", "get", job["id"])
    as_the_api_answered(cli, "jobs", "list", "--limit", "1")
    as_the_api_answered(cli, "jobs", "update", job["id"], "--priority", "7", "--timezone", "Europe/Paris")
    items_as_the_api_answered(cli, "jobs", "preview", job["id"], "--count", "3")
    items_as_the_api_answered(cli, "schedules", "preview", "--cron", "0 9 * * *", "--count", "2")
    triggered = as_the_api_answered(cli, "jobs", "trigger", job["id"], "--payload", '{"n": 1}')
    cli.pipeline.drain()
    run = as_the_api_answered(cli, "runs", "get", triggered["id"])
    assert run["status"] == "SUCCEEDED"
    as_the_api_answered(cli, "runs", "list", job["id"])
    as_the_api_answered(cli, "runs", "search", "--job", job["id"])
    as_the_api_answered(cli, "runs", "logs", run["id"])
    as_the_api_answered(cli, "runs", "result", run["id"])
    as_the_api_answered(cli, "runs", "stuck")
    as_the_api_answered(cli, "jobs", "backfill", job["id"], "--from", "-20m", "--to", "-1m", "--max-runs", "2")
    as_the_api_answered(cli, "jobs", "pause", job["id"])
    as_the_api_answered(cli, "jobs", "resume", "--tag", "team=data")
    as_the_api_answered(cli, "jobs", "cancel", job["id"])
    as_the_api_answered(cli, "audit", "--resource", job["id"])


def test_workflows_their_runs_and_the_dlq_print_as_the_api_answered(cli, tmp_path):
    saga = as_the_api_answered(cli, "workflows", "create", "--file", _file(tmp_path, "saga.json", SAGA))
    started = as_the_api_answered(cli, "workflows", "trigger", saga["id"])
    cli.pipeline.drain()
    ended = as_the_api_answered(cli, "workflow-runs", "get", started["id"])
    assert ended["status"] == "COMPENSATED"
    as_the_api_answered(cli, "workflow-runs", "list", saga["id"])
    step_run = ended["steps"]["b"]["run_id"]
    failed = as_the_api_answered(cli, "runs", "get", step_run)
    assert failed["status"] == "FAILED"
    as_the_api_answered(cli, "dlq", "list")
    printed, answered = printed_and_answered(cli, "dlq", "redrive", "--all", exit_code=1)  # one not re-queued
    assert json.dumps(printed) == json.dumps(answered)
    as_the_api_answered(cli, "dlq", "dismiss", step_run)

    diamond = as_the_api_answered(cli, "workflows", "create", "--file", _file(tmp_path, "diamond.json", DIAMOND))
    as_the_api_answered(cli, "workflows", "list")
    as_the_api_answered(cli, "workflows", "update", diamond["id"], "--priority", "3")
    as_the_api_answered(cli, "workflows", "pause", diamond["id"])
    as_the_api_answered(cli, "workflows", "resume", diamond["id"])
    run = as_the_api_answered(cli, "workflows", "trigger", diamond["id"])
    as_the_api_answered(cli, "workflow-runs", "cancel", run["id"], "--compensate")
    as_the_api_answered(cli, "workflows", "cancel", diamond["id"])


def test_calendars_freezes_and_tenants_print_as_the_api_answered(cli, tmp_path):
    calendar = as_the_api_answered(cli, "calendars", "create", "--file", _file(tmp_path, "c.json", CALENDAR))
    as_the_api_answered(cli, "calendars", "get", calendar["id"])
    as_the_api_answered(cli, "calendars", "list")
    blocked = as_the_api_answered(cli, "calendars", "blocked", calendar["id"], "--from", "2026-12-24T00:00:00Z")
    assert "from" in blocked  # the API's name, not the model's from_
    as_the_api_answered(cli, "calendars", "update", calendar["id"], "--mode", "include")
    as_the_api_answered(cli, "calendars", "delete", calendar["id"])

    printed, answered = printed_and_answered(cli, "freezes", "create", "--for", "30m", "--all", "--reason", "deploy")
    assert json.dumps(printed) == json.dumps(answered)
    as_the_api_answered(cli, "freezes", "get", printed["id"])
    items_as_the_api_answered(cli, "freezes", "list")
    as_the_api_answered(cli, "freezes", "lift", printed["id"])

    as_the_api_answered(cli, "tenants", "get", "me")
    as_the_api_answered(cli, "tenants", "set", "default", "--weight", "2")
    as_the_api_answered(cli, "tenants", "get", "default")


def test_metrics_and_the_api_itself_print_as_the_api_answered(cli):
    from tickwork import __version__

    catalogue = as_the_api_answered(cli, "metrics", "catalogue")
    names = [item["name"] for item in catalogue["items"]]
    assert {"lateness_p99", "runs_failed"} <= set(names)
    figures = as_the_api_answered(cli, "metrics", "get", "--names", "runs_failed", "--from", "-2h", "--period", "600")
    assert (figures["period"], {s["name"] for s in figures["series"]}) == (600, {"runs_failed"})
    table = cli("metrics", "get", "--names", "runs_failed", output="table")
    assert table.exit_code == 0, table.output + table.stderr
    assert table.stdout.split()[:5] == ["NAME", "BY", "UNIT", "POINTS", "LATEST"]
    assert "a point every 60 s" in table.stderr

    health = as_the_api_answered(cli, "api", "health")
    assert (health["status"], health["version"], health["region"]["mode"]) == ("ok", __version__, "single")
    document = as_the_api_answered(cli, "api", "openapi")
    assert "/v1/metrics" in document["paths"]
