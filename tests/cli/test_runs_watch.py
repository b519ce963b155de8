"""`tickwork runs watch RUN_ID`: follows one run, a line each time its status or progress changes, then the run."""

from __future__ import annotations

import json

import pytest

import tests.durable_jobtypes  # noqa: F401  # registers progress-reports

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

DONE = {"fraction": 1, "message": "4 pages exported"}


def test_runs_watch_follows_a_run_to_its_end_and_shows_its_progress(cli):
    payload = json.dumps({"reports": [{"fraction": 0.5}, DONE]})
    job = cli.json(
        "jobs", "create", "--name", "export", "--type", "progress-reports", "--rate", "1 day", "--payload", payload
    )
    run = cli.json("jobs", "trigger", job["id"])
    watched = cli("runs", "watch", run["id"], "--interval", "1")
    assert watched.exit_code == 0, watched.output
    lines = watched.stderr.splitlines()
    assert lines[0] == "QUEUED"
    assert lines[1].startswith("SUCCEEDED 100% 4 pages exported (at 2026-11-21T12:00:01")
    shown = json.loads(watched.stdout)
    assert (shown["status"], shown["progress"]["message"]) == ("SUCCEEDED", "4 pages exported")


class _MidDraw:
    """The backoff's full jitter drawn at half its ceiling: 1,800 s of a 3,600 s backoff, so the retry is parked
    (past the 900 s a message can wait), never delivered within the watch. An unseeded draw under 0.25 put it on a
    message that the pipeline delivered, and the run finished before the watch gave up."""

    def random(self) -> float:
        return 0.5


def test_runs_watch_gives_up_with_the_timeout_exit_status(cli, monkeypatch):
    monkeypatch.setattr("tickwork.model.backoff.random", _MidDraw())
    job = cli.json(
        "jobs",
        "create",
        "--name",
        "flaky",
        "--type",
        "echo",
        "--rate",
        "1 day",
        "--payload",
        '{"fail_attempts": 5}',
        "--max-attempts",
        "3",
        "--backoff",
        "3600",
        "--max-backoff",
        "3600",
    )
    run = cli.json("jobs", "trigger", job["id"])
    watched = cli("runs", "watch", run["id"], "--interval", "1", "--wait-timeout", "2")
    assert watched.exit_code == 3, watched.output
    assert watched.stderr.splitlines()[-2:] == ["RETRYING", "tickwork: run still unfinished after 2 s"]
