"""`tickwork jobs preview`, `schedules preview`, `jobs backfill` and `--jitter-seconds`, against the real API."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _create(cli, *extra):
    return cli.json("jobs", "create", "--name", "hello", "--type", "echo", *extra)


def test_schedules_preview_shows_a_new_york_fold(cli):
    page = cli.json(
        "schedules", "preview", "--cron", "30 1 * * *", "--timezone", "America/New_York",
        "--from", "2026-10-31T00:00:00Z", "--count", "3",
    )  # fmt: skip
    assert [(i["local"], i["dst"]) for i in page["items"]] == [
        ("2026-10-31T01:30:00.000-04:00", None),
        ("2026-11-01T01:30:00.000-04:00", "fold"),
        ("2026-11-02T01:30:00.000-05:00", None),
    ]


def test_schedules_preview_as_a_table(cli):
    shown = cli("schedules", "preview", "--rate", "1 hour", "--tz", "Europe/Paris", output="table")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["AT", "(UTC)", "LOCAL", "DST"]
    assert len(lines) == 6  # the header and the default five
    assert "2026-11-21T14:00:00.000+01:00" in lines[1]


def test_schedules_preview_count_over_1000_is_refused(cli):
    refused = cli("schedules", "preview", "--rate", "1 hour", "--count", "1001")
    assert refused.exit_code == 1
    assert "count" in refused.stderr


def test_jobs_preview(cli):
    job = _create(cli, "--rate", "1 hour")
    page = cli.json("jobs", "preview", job["id"], "--count", "2")
    assert [i["at"] for i in page["items"]] == ["2026-11-21T13:00:00.000Z", "2026-11-21T14:00:00.000Z"]


def test_jobs_backfill_with_relative_times_then_again(cli):
    job = _create(cli, "--cron", "0 * * * *")
    first = cli.json("jobs", "backfill", job["id"], "--from", "-3h", "--to", "-1s", "--max-runs", "10")
    assert first["created"] == 3
    assert first["existing"] == []
    again = cli.json("jobs", "backfill", job["id"], "--from", "-3h", "--to", "-1s")
    assert again == {
        "created": 0,
        "runs": [],
        "existing": ["2026-11-21T09:00:00.000Z", "2026-11-21T10:00:00.000Z", "2026-11-21T11:00:00.000Z"],
    }


def test_jobs_backfill_into_the_future_is_refused(cli):
    job = _create(cli, "--cron", "0 * * * *")
    refused = cli("jobs", "backfill", job["id"], "--from", "-1h", "--to", "+1h")
    assert refused.exit_code == 1
    assert "to" in refused.stderr
    assert "future" in refused.stderr


def test_jitter_seconds_on_create_and_update(cli):
    job = _create(cli, "--rate", "1 hour", "--jitter-seconds", "30")
    assert job["jitter_seconds"] == 30
    updated = cli.json("jobs", "update", job["id"], "--jitter-seconds", "600")
    assert updated["jitter_seconds"] == 600
    refused = cli("jobs", "update", job["id"], "--jitter-seconds", "7200")
    assert refused.exit_code == 1
    assert "jitter_seconds" in refused.stderr
