"""`tickwork runs retry --status FAILED --job ID` (or --run, repeatable): every FAILED run the filters find,
through POST /v1/bulk/runs, page after page, a line per run; one run by its id as before; exit status 1 when a run
was not found or refused, 2 for a usage error."""

from __future__ import annotations

import json

FAILING = ("--type", "echo", "--rate", "1 hour", "--payload", '{"fail_attempts": 9}', "--max-attempts", "1")


def _failed_runs(cli, name: str, count: int) -> tuple[dict, list[str]]:
    job = cli.json("jobs", "create", "--name", name, *FAILING)
    runs = [cli.json("jobs", "trigger", job["id"])["id"] for _ in range(count)]
    cli.pipeline.drain()
    return job, runs


def test_runs_retry_by_job_and_status_requeues_its_failed_runs_then_again_none(cli):
    job, runs = _failed_runs(cli, "f", 3)
    _other, (others,) = _failed_runs(cli, "g", 1)

    retried = cli("runs", "retry", "--status", "FAILED", "--job", job["id"], output="table")
    assert retried.exit_code == 0, retried.stderr
    lines = retried.stdout.splitlines()
    assert lines[0].split() == ["RUN", "OUTCOME", "STATUS", "REASON"]
    assert sorted(line.split()[0] for line in lines[1:] if line.strip()) == sorted(runs)
    assert retried.stdout.count(" ok ") == 3
    assert {cli.json("runs", "get", run)["status"] for run in runs} == {"QUEUED"}
    assert cli.json("runs", "get", others)["status"] == "FAILED"

    again = cli.json("runs", "retry", "--job", job["id"])
    assert again["items"] == []


def test_runs_retry_of_named_runs_exits_1_when_one_is_refused_and_2_for_a_usage_error(cli):
    _job, (first, second) = _failed_runs(cli, "f", 2)
    cli.json("runs", "retry", first)  # by id, as before
    named = cli("runs", "retry", "--run", first, "--run", second)
    assert named.exit_code == 1
    items = json.loads(named.stdout)["items"]
    assert [(i["run_id"], i["outcome"], i.get("reason")) for i in items] == [
        (first, "refused", "not_failed"),
        (second, "ok", None),
    ]
    assert cli("runs", "retry").exit_code == 2
    assert cli("runs", "retry", first, "--job", "j" + "0" * 25).exit_code == 2
    assert cli("runs", "retry", "--run", first, "--job", "j" + "0" * 25).exit_code == 2
    assert cli("runs", "retry", "--job", "j" + "0" * 25, "--start-over").exit_code == 2
    bad = cli("runs", "retry", "--status", "SUCCEEDED")
    assert bad.exit_code == 1
    assert "filters.status" in bad.stderr
