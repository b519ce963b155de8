"""`--tenant` on the list and get commands: an admin's view of one tenant's (the API's `tenant` query parameter),
against the real API handler (local mode, open: the caller is tenant `default`, an admin)."""

from __future__ import annotations

import json

import pytest
from tickwork.control.api_examples import CALENDAR

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

LISTS = [
    ("jobs", "list"),
    ("workflows", "list"),
    ("dlq", "list"),
    ("runs", "stuck"),
    ("calendars", "list"),
    ("freezes", "list"),
]


@pytest.mark.parametrize("command", LISTS)
def test_each_list_command_sends_the_tenant_it_is_given(cli, command):
    reply = cli.json(*command, "--tenant", "acme")
    assert reply["items"] == []  # acme has nothing; the admin's own (default) items are not shown
    assert "tenant=acme" in cli.transport.sent[-1][1]


def test_an_admin_lists_and_reads_a_named_tenants_items(cli, tmp_path):
    job = cli.json("jobs", "create", "--name", "n", "--type", "echo", "--rate", "1 hour")
    assert [j["id"] for j in cli.json("jobs", "list", "--tenant", "default")["items"]] == [job["id"]]
    file = tmp_path / "calendar.json"
    file.write_text(json.dumps(CALENDAR["holidays"][1]))
    calendar = cli.json("calendars", "create", "--file", str(file))
    assert cli.json("calendars", "get", calendar["id"], "--tenant", "default")["id"] == calendar["id"]
    assert "tenant=default" in cli.transport.sent[-1][1]
    assert cli("calendars", "get", calendar["id"], "--tenant", "acme").exit_code == 1  # not acme's: 404


GETS = [
    ("jobs", "get"),
    ("runs", "get"),
    ("runs", "result"),
    ("workflows", "get"),
    ("workflow-runs", "get"),
    ("freezes", "get"),
]


@pytest.mark.parametrize("command", LISTS)
def test_each_list_command_sends_every_tenant_and_shows_whose_each_item_is(cli, command):
    from tickwork.control.api_bodies import JobSpec

    cli.pipeline.services.jobs.create_job("acme", JobSpec(name="acme's", type="echo", schedule={"rate": "1 hour"}))
    reply = cli.json(*command, "--tenant", "*")
    assert "tenant=%2A" in cli.transport.sent[-1][1]
    assert all("tenant" in item for item in reply["items"])
    table = cli(*command, "--tenant", "*", output="table")
    assert table.exit_code == 0, table.output
    assert table.stdout.startswith("(none)") or table.stdout.split()[0] == "TENANT"


def test_an_admin_lists_every_tenants_jobs_with_a_tenant_column(cli):
    from tickwork.control.api_bodies import JobSpec

    spec = JobSpec(name="theirs", type="echo", schedule={"rate": "1 hour"})
    theirs = cli.pipeline.services.jobs.create_job("acme", spec)
    mine = cli.json("jobs", "create", "--name", "mine", "--type", "echo", "--rate", "1 hour")
    listed = cli.json("jobs", "list", "--tenant", "*")["items"]
    assert {(j["id"], j["tenant"]) for j in listed} == {(theirs.id, "acme"), (mine["id"], "default")}
    table = cli("jobs", "list", "--tenant", "*", output="table").stdout.splitlines()
    assert table[0].split()[:2] == ["TENANT", "ID"]
    assert {line.split()[0] for line in table[1:]} == {"acme", "default"}


@pytest.mark.parametrize("command", GETS)
def test_each_get_command_sends_the_tenant_it_is_given(cli, command):
    item_id = {
        "jobs": "j01jd2k3m4n5p6q7r8s9t0v1w2",
        "runs": "j01jd2k3m4n5p6q7r8s9t0v1w2.1700000000000",
        "workflows": "w01jd2k3m4n5p6q7r8s9t0v1w2",
        "workflow-runs": "w01jd2k3m4n5p6q7r8s9t0v1w2.1700000000000",
        "freezes": "f01jd2k3m4n5p6q7r8s9t0v1w2",
    }[command[0]]
    assert cli(*command, item_id, "--tenant", "acme").exit_code == 1  # no such item: 404
    assert "tenant=acme" in cli.transport.sent[-1][1]


def test_an_admin_reads_a_tenants_job_by_id_only_as_that_tenant(cli):
    from tickwork.control.api_bodies import JobSpec

    job = cli.pipeline.services.jobs.create_job("acme", JobSpec(name="n", type="echo", schedule={"rate": "1 hour"}))
    assert cli.json("jobs", "get", job.id, "--tenant", "acme")["tenant"] == "acme"
    assert cli.json("jobs", "get", job.id, "--tenant", "*")["id"] == job.id
    assert cli("jobs", "get", job.id, "--tenant", "globex").exit_code == 1
