"""`tickwork runs logs` and `tickwork jobs list --tag`, against the real API."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _finished_run_id(cli, job_id: str) -> str:
    waited = cli("runs", "list", job_id, "--wait", "--interval", "300", "--wait-timeout", "600", output="json")
    assert waited.exit_code == 0, waited.output
    return cli.json("runs", "list", job_id)["items"][0]["id"]


def test_runs_logs_shows_the_lines_the_handler_logged(cli):
    job = cli.json(
        "jobs", "create", "--name", "logs", "--type", "echo", "--at", "+300s",
        "--payload", '{"log": ["fetched 3 rows", "wrote the report"]}',
    )  # fmt: skip
    run_id = _finished_run_id(cli, job["id"])
    logs = cli.json("runs", "logs", run_id)
    assert [(line["attempt"], line["level"], line["message"]) for line in logs["lines"]] == [
        (1, "INFO", "fetched 3 rows"),
        (1, "INFO", "wrote the report"),
    ]
    shown = cli("runs", "logs", run_id, output="table")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].split()[:4] == ["AT", "(UTC)", "ATTEMPT", "LEVEL"]
    assert "fetched 3 rows" in lines[1]
    assert "wrote the report" in lines[2]


def test_runs_logs_of_an_unknown_run_is_an_error(cli):
    shown = cli("runs", "logs", "j01m7yzmhg0a0fk5kj1gwkvzxq.1795262460000")
    assert shown.exit_code == 1
    assert "404" in shown.stderr or "not found" in shown.stderr.lower()


def test_jobs_list_filters_by_tag(cli):
    tagged = cli.json("jobs", "create", "--name", "a", "--type", "echo", "--rate", "1 hour", "--tag", "team=data")
    cli.json("jobs", "create", "--name", "b", "--type", "echo", "--rate", "1 hour", "--tag", "team=web")
    page = cli.json("jobs", "list", "--tag", "team=data")
    assert [j["id"] for j in page["items"]] == [tagged["id"]]
    refused = cli("jobs", "list", "--tag", "no-equals-sign")
    assert refused.exit_code == 1
    assert "tag" in refused.stderr
