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
