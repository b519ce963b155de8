"""`--at now`, as `jobs create --help` offers it: the CLI sends the current instant, which has passed by the time
the API reads it; the API takes an `at` less than a minute past and sends its run at once."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.api.test_workflow_routes import DIAMOND

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _sent_schedule(cli, method: str) -> dict[str, object]:
    (body,) = [json.loads(b) for m, _, _, b in cli.transport.sent if m == method and b is not None]
    return body["schedule"]  # type: ignore[no-any-return]


def _delays(pipeline) -> list[int]:
    return [e["DelaySeconds"] for p in pipeline.calls.params("SendMessageBatch") for e in p["Entries"]]


def test_jobs_create_at_now_sends_the_current_instant_and_its_run_goes_at_once(cli, pipeline, monkeypatch):
    from tickwork_cli import clock

    # The CLI read its clock 5 s before the API read its own (a slow request): `now` has passed on arrival.
    monkeypatch.setattr(clock, "now", lambda: pipeline.clock.now() - timedelta(seconds=5))
    created = cli("jobs", "create", "--name", "now", "--type", "echo", "--at", "now", "--payload", '{"k": 1}')
    assert created.exit_code == 0, created.output
    assert _sent_schedule(cli, "POST") == {"at": "2026-11-21T11:59:55.000Z"}
    job = json.loads(created.stdout)
    assert job["next_run_at"] == "2026-11-21T11:59:55.000Z"
    assert _delays(pipeline) == [0]  # sent at the create, to run at once
    assert pipeline.drain() == 1
    (run,) = cli.json("runs", "list", job["id"])["items"]
    assert (run["status"], run["scheduled_for"]) == ("SUCCEEDED", "2026-11-21T11:59:55.000Z")
    assert cli.json("runs", "result", run["id"]) == {"k": 1}


def test_jobs_update_at_now_moves_a_one_shot_to_now(cli, pipeline):
    job = cli.json("jobs", "create", "--name", "later", "--type", "echo", "--at", "+1d")
    cli.transport.sent.clear()
    updated = cli.json("jobs", "update", job["id"], "--at", "now")
    assert _sent_schedule(cli, "PATCH") == {"at": "2026-11-21T12:00:00.000Z"}
    assert updated["next_run_at"] == "2026-11-21T12:00:00.000Z"
    assert pipeline.drain() == 1
    assert [r["status"] for r in cli.json("runs", "list", job["id"])["items"]] == ["SUCCEEDED"]


def test_workflows_create_at_now_is_accepted(cli, tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(DIAMOND))
    workflow = cli.json("workflows", "create", "--file", str(path), "--at", "now")
    assert workflow["schedule"]["at"] == "2026-11-21T12:00:00.000Z"
    assert workflow["next_run_at"] == "2026-11-21T12:00:00.000Z"


def test_at_a_minute_ago_is_refused_naming_the_field(cli):
    refused = cli("jobs", "create", "--name", "n", "--type", "echo", "--at", "-60s")
    assert refused.exit_code == 1
    assert "schedule.at" in refused.stderr
