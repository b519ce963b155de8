"""`tickwork jobs pause|resume|cancel --tag k=v`: every job with the tags, through POST /v1/bulk/jobs, a line per
job; one job by its id as before; exit status 1 when a job was refused."""

from __future__ import annotations

import json


def _create(cli, name: str, *tags: str) -> dict:
    flags = [arg for tag in tags for arg in ("--tag", tag)]
    return cli.json("jobs", "create", "--name", name, "--type", "echo", "--rate", "1 hour", *flags)


def test_pause_three_jobs_by_tag_in_one_command_then_resume_them(cli):
    data = [_create(cli, f"d{i}", "team=data") for i in range(3)]
    other = _create(cli, "o", "team=ops")
    paused = cli.json("jobs", "pause", "--tag", "team=data")
    assert {item["job_id"]: item["outcome"] for item in paused["items"]} == {job["id"]: "ok" for job in data}
    assert cli.json("jobs", "get", other["id"])["state"] == "ACTIVE"

    again = cli("jobs", "pause", "--tag", "team=data", output="table")
    assert again.exit_code == 0
    assert again.stdout.splitlines()[0].split() == ["JOB", "OUTCOME", "STATE", "REASON"]
    assert again.stdout.count("already") == 3

    resumed = cli.json("jobs", "resume", "--tag", "team=data", "--tag", "team=data")
    assert {item["outcome"] for item in resumed["items"]} == {"ok"}
    assert cli.json("jobs", "pause", data[0]["id"])["state"] == "PAUSED"  # by id, as before


def test_a_refused_job_exits_1_and_a_usage_error_is_2(cli):
    job = _create(cli, "c", "team=x")
    cli.json("jobs", "cancel", "--tag", "team=x")
    refused = cli("jobs", "resume", "--tag", "team=x")
    assert refused.exit_code == 1
    (item,) = json.loads(refused.stdout)["items"]
    assert (item["job_id"], item["outcome"]) == (job["id"], "refused")
    assert cli("jobs", "pause").exit_code == 2
    assert cli("jobs", "pause", job["id"], "--tag", "team=x").exit_code == 2


def test_jobs_named_or_all_of_them(cli):
    first, second = _create(cli, "a"), _create(cli, "b")
    named = cli("jobs", "pause", "--job", first["id"], "--job", "j" + "0" * 25)
    assert named.exit_code == 1  # one was not found
    items = json.loads(named.stdout)["items"]
    assert [(i["job_id"], i["outcome"]) for i in items] == [(first["id"], "ok"), ("j" + "0" * 25, "not_found")]
    every = cli.json("jobs", "cancel", "--all")
    assert {i["job_id"] for i in every["items"]} == {first["id"], second["id"]}
    assert cli("jobs", "pause", "--all", "--tag", "a=b").exit_code == 2
