"""`tickwork audit` against the real API handler (local mode, open: the caller is tenant `default`, an admin)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_audit_lists_who_changed_what_and_filters(cli):
    job = cli.json("jobs", "create", "--name", "n", "--type", "echo", "--rate", "1 hour")
    cli.json("jobs", "pause", job["id"])
    records = cli.json("audit", "--resource", job["id"])["items"]
    assert sorted(r["action"] for r in records) == ["job.create", "job.pause"]
    assert {r["actor"]["kind"] for r in records} == {"local-key"}
    assert {r["actor"]["display"] for r in records} == {"default"}
    paused = cli.json("audit", "--resource", job["id"], "--action", "job.pause", "--from", "-1h")["items"]
    assert [r["action"] for r in paused] == ["job.pause"]
    assert "from=" in cli.transport.sent[-1][1]


def test_the_table_shows_actor_action_and_resource(cli):
    job = cli.json("jobs", "create", "--name", "n", "--type", "echo", "--rate", "1 hour")
    shown = cli("audit", "--tenant", "default", output="table")
    assert shown.exit_code == 0, shown.stderr
    header, row = shown.stdout.splitlines()[:2]
    assert header.split()[:4] == ["AT", "ACTOR", "TENANT", "ACTION"]
    assert "job.create" in row
    assert job["id"] in row
