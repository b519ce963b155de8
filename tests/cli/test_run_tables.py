"""Run tables people can read: lateness as `3h 29m`, a skip's reason beside its status, deferrals shown."""

from __future__ import annotations

import pytest
from tickwork_cli import render

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0 ms"),
        (412, "412 ms"),
        (12_578, "12.6 s"),
        (252_000, "4m 12s"),
        (12_578_375, "3h 29m"),
        (3 * 86_400_000 + 7_200_000, "3d 2h"),
        (-1_500, "-1.5 s"),
        (None, None),
    ],
)
def test_a_duration_reads_in_its_largest_units(ms, text):
    assert render.duration_text(ms) == text


def _run(**fields):
    return {"id": "r1", "status": "SUCCEEDED", "scheduled_for": "2026-11-21T12:00:00.000Z", "attempts": 1} | fields


def _row(run: dict) -> dict[str, str]:
    header, line = render.items_table([run], render.RUN_COLUMNS).splitlines()
    starts = [header.index(name) for name, _ in render.RUN_COLUMNS]
    cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    return dict(zip([name for name, _ in render.RUN_COLUMNS], cells, strict=True))


def test_lateness_is_shown_in_hours_and_minutes_not_raw_milliseconds():
    row = _row(_run(lateness_ms=12_578_375))
    assert row["LATE"] == "3h 29m"
    assert "LATE MS" not in render.items_table([_run()], render.RUN_COLUMNS)


def test_a_skip_reason_stands_beside_its_status_not_under_error():
    row = _row(_run(status="SKIPPED", skip_reason="paused", attempts=0))
    assert row["STATUS"] == "SKIPPED (paused)"
    assert row["ERROR"] == "-"
    failed = _row(_run(status="FAILED", error={"type": "Boom", "message": "it broke"}))
    assert (failed["STATUS"], failed["ERROR"]) == ("FAILED", "it broke")


def test_a_deferred_run_shows_how_often_and_why():
    row = _row(_run(status="QUEUED", attempts=0, deferred=3, deferred_reason="concurrency_key"))
    assert row["DEFERRED"] == "3 (concurrency_key)"
    assert _row(_run())["DEFERRED"] == "-"


def test_runs_list_shows_a_rate_limited_runs_deferral(cli):
    job = cli.json(
        "jobs", "create", "--name", "n", "--type", "echo", "--rate", "1 day", "--rate-limit", "partner=1/min"
    )
    for _ in range(2):
        cli.json("jobs", "trigger", job["id"])
    cli.pipeline.drain()  # one run starts, the other waits its turn (deferred), then starts
    runs = cli.json("runs", "list", job["id"])["items"]
    assert [r["status"] for r in runs] == ["SUCCEEDED"] * 2
    (deferred,) = [r for r in runs if r["deferred"]]
    table = cli("runs", "list", job["id"], output="table")
    line = next(line for line in table.stdout.splitlines() if line.startswith(deferred["id"]))
    assert f"{deferred['deferred']} (rate_limit)" in line


def test_runs_list_started_leaves_out_the_runs_claimed_ahead(cli):
    job = cli.json("jobs", "create", "--name", "n", "--type", "echo", "--cron", "* * * * *")
    cli.pipeline.tick()  # its next two occurrences claimed: QUEUED, to come
    assert {r["status"] for r in cli.json("runs", "list", job["id"])["items"]} == {"QUEUED"}
    assert cli.json("runs", "list", job["id"], "--started")["items"] == []
    cli.json("jobs", "trigger", job["id"])
    cli.pipeline.drain()
    (last,) = cli.json("runs", "list", job["id"], "--started", "--limit", "1")["items"]
    assert (last["trigger"], last["status"]) == ("manual", "SUCCEEDED")


def test_runs_get_collapses_the_attempt_history_and_reads_the_handler_and_wall_times():
    run = _run(
        handler_ms=240_000,
        wall_ms=250_500,
        duration_ms=8_210,
        attempt_history=[{"attempt": 1, "outcome": "yielded"}] * 19 + [{"attempt": 1, "outcome": "succeeded"}],
        earlier_attempts={
            "records": 10,
            "first_attempt": 1,
            "last_attempt": 1,
            "first_started_at": "2026-11-21T12:00:00.000Z",
            "handler_ms": 80_000,
            "outcomes": {"yielded": 10},
        },
    )
    rows = dict(line.split(None, 1) for line in render.record(run).splitlines()[1:])
    assert rows["handler_ms"].strip() == "4m 0s (240000)"
    assert rows["wall_ms"].strip() == "4m 10s (250500)"
    assert rows["attempt_history"].strip() == "20 kept: 19 yielded, 1 succeeded"
    assert rows["earlier_attempts"].strip() == (
        "10 earlier (attempts 1-1): 10 yielded, 1m 20s handler time, from 2026-11-21T12:00:00.000Z"
    )
