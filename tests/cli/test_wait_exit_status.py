"""A waiting command's exit status says how the runs it waited for ended (`runs watch`, `runs list --wait`,
`workflow-runs list --wait`): a CI step gates on it. The codes are options.EXIT_BY_ENDING's, shown in --help."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

FAILS = ["--payload", '{"fail_attempts": 5}', "--max-attempts", "1"]


def _job(cli, *extra):
    return cli.json("jobs", "create", "--name", "n", "--type", "echo", *extra)


def test_runs_watch_exits_0_when_the_run_succeeded(cli):
    run = cli.json("jobs", "trigger", _job(cli, "--rate", "1 day")["id"])
    watched = cli("runs", "watch", run["id"], "--interval", "1")
    assert watched.exit_code == 0, watched.output
    assert json.loads(watched.stdout)["status"] == "SUCCEEDED"


def test_runs_watch_exits_non_zero_when_the_run_failed(cli):
    run = cli.json("jobs", "trigger", _job(cli, "--rate", "1 day", *FAILS)["id"])
    watched = cli("runs", "watch", run["id"], "--interval", "1")
    assert watched.exit_code == 4, watched.output
    assert json.loads(watched.stdout)["status"] == "FAILED"  # the run is shown all the same


def test_runs_watch_exits_non_zero_when_the_run_was_skipped(cli):
    job = _job(cli, "--at", "+30s")  # claimed at its create: its run is QUEUED
    (run,) = cli.json("runs", "list", job["id"])["items"]
    cli.json("jobs", "pause", job["id"])
    watched = cli("runs", "watch", run["id"], "--interval", "30")
    assert watched.exit_code == 5, watched.output
    shown = json.loads(watched.stdout)
    assert (shown["status"], shown["skip_reason"]) == ("SKIPPED", "paused")


def test_runs_list_wait_exits_non_zero_when_the_run_failed(cli):
    job = _job(cli, "--at", "+10s", *FAILS)
    waited = cli("runs", "list", job["id"], "--wait", "--interval", "10", "--wait-timeout", "60")
    assert waited.exit_code == 4, waited.output
    assert [r["status"] for r in json.loads(waited.stdout)["items"]] == ["FAILED"]


def test_runs_list_without_wait_exits_0_whatever_the_runs(cli):
    job = _job(cli, "--at", "+10s", *FAILS)
    cli("runs", "list", job["id"], "--wait", "--interval", "10", "--wait-timeout", "60")
    listed = cli("runs", "list", job["id"])
    assert listed.exit_code == 0, listed.output
    assert [r["status"] for r in json.loads(listed.stdout)["items"]] == ["FAILED"]


def test_workflows_runs_wait_exits_non_zero_when_the_run_was_compensated(cli):
    trip = str(ROOT / "examples" / "workflows" / "book-trip.json")
    workflow = cli.json("workflows", "create", "--file", trip)
    cli.json("workflows", "trigger", workflow["id"])
    waited = cli("workflow-runs", "list", workflow["id"], "--wait", "--interval", "1", "--wait-timeout", "30")
    assert waited.exit_code == 7, waited.output
    assert [r["status"] for r in json.loads(waited.stdout)["items"]] == ["COMPENSATED"]


@pytest.mark.parametrize(
    ("endings", "code"),
    [
        (["SUCCEEDED"], 0),
        (["SUCCEEDED", "SUCCEEDED"], 0),
        ([], 0),
        (["FAILED"], 4),
        (["SKIPPED"], 5),
        (["CANCELLED"], 6),
        (["COMPENSATED"], 7),
        (["COMPENSATION_FAILED"], 8),
        (["SUCCEEDED", "SKIPPED", "FAILED"], 4),
        (["CANCELLED", "COMPENSATED", "SKIPPED"], 7),
    ],
)
def test_the_exit_status_of_each_ending_and_of_several(endings, code):
    from tickwork_cli.options import exit_status_of

    assert exit_status_of(endings) == code


@pytest.mark.parametrize(
    "argv", [["runs", "watch"], ["runs", "list"], ["workflow-runs", "list"], ["workflows", "runs"]]
)
def test_the_exit_statuses_are_in_the_waiting_commands_help(cli, argv):
    from tickwork_cli.main import app
    from tickwork_cli.options import EXIT_BY_ENDING

    shown = cli.runner.invoke(app, [*argv, "--help"], terminal_width=200).stdout
    lines = [" ".join(line.strip(" │").split()) for line in shown.splitlines()]
    for ending, code in {"SUCCEEDED": 0, **EXIT_BY_ENDING}.items():
        assert any(line.startswith(f"{code} ") and ending in line for line in lines), (ending, shown)
    assert any(line.startswith("3 the wait timed out") for line in lines), shown


def test_runs_list_wait_answers_for_every_run_listed_and_limit_1_for_the_newest(cli, pipeline):
    job = _job(cli, "--rate", "1 day", "--max-attempts", "1")
    cli.json("jobs", "trigger", job["id"], "--payload", '{"fail_attempts": 5}')
    pipeline.drain()
    pipeline.clock.advance(1)
    cli.json("jobs", "trigger", job["id"])
    waited = cli("runs", "list", job["id"], "--wait", "--interval", "1", "--wait-timeout", "30")
    assert waited.exit_code == 4, waited.output
    assert [r["status"] for r in json.loads(waited.stdout)["items"]] == ["SUCCEEDED", "FAILED"]
    newest = cli("runs", "list", job["id"], "--wait", "--limit", "1", "--interval", "1", "--wait-timeout", "30")
    assert newest.exit_code == 0, newest.output
    assert [r["status"] for r in json.loads(newest.stdout)["items"]] == ["SUCCEEDED"]
