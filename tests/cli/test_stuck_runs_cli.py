"""`tickwork runs stuck`: GET /v1/runs/stuck as a table (how long past its time or lease, by the API's clock) or
as the API's JSON."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_runs_stuck_lists_a_run_queued_past_its_time(cli):
    job = cli.json("jobs", "create", "--name", "n", "--type", "echo", "--rate", "1 day")
    run = cli.json("jobs", "trigger", job["id"])
    assert cli("runs", "stuck", output="table").stdout.strip() == "(none)"
    cli.pipeline.clock.advance(6 * 60 + 30)

    listed = cli.json("runs", "stuck", "--limit", "5")
    table = cli("runs", "stuck", output="table").stdout.splitlines()

    assert [(r["run_id"], r["reason"]) for r in listed["items"]] == [(run["id"], "queued_past_threshold")]
    assert table[0].split() == ["ID", "STATUS", "REASON", "SCHEDULED", "FOR", "FOR", "JOB"]
    assert table[1].split() == [
        run["id"],
        "QUEUED",
        "queued_past_threshold",
        run["scheduled_for"],
        "6m",
        "30s",
        job["id"],
    ]
