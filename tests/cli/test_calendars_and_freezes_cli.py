"""`tickwork calendars list|get|create|update|delete|blocked` and `tickwork freezes list|get|create|lift`: noun groups with
the verbs jobs have, the old verbs (`freeze`, `unfreeze`, `calendars replace`) hidden aliases that still work;
`jobs preview`'s table shows what blocks an occurrence."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

# The test clock's day (2026-11-21) and the next, blacked out.
WEEKEND = {"name": "weekend", "timezone": "UTC", "windows": [{"dates": ["2026-11-21", "2026-11-22"]}]}


def _file(tmp_path, content: dict[str, Any], name: str = "calendar.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(content))
    return str(path)


def _help(cli, *argv: str) -> str:
    from tickwork_cli.main import app

    return cli.runner.invoke(app, [*argv, "--help"], terminal_width=200).stdout  # type: ignore[no-any-return]


def test_calendars_create_list_get_update_and_delete(cli, tmp_path):
    created = cli.json("calendars", "create", "--file", _file(tmp_path, WEEKEND), "--name", "long weekend")
    assert (created["name"], created["mode"], created["version"]) == ("long weekend", "exclude", 1)
    assert [c["id"] for c in cli.json("calendars", "list")["items"]] == [created["id"]]
    table = cli("calendars", "list", output="table").stdout.splitlines()
    assert table[0].split() == ["ID", "NAME", "MODE", "TIMEZONE", "WINDOWS"]
    assert table[1].split() == [created["id"], "long", "weekend", "exclude", "UTC", "1"]
    assert cli.json("calendars", "get", created["id"]) == created

    renamed = cli.json("calendars", "update", created["id"], "--name", "weekend off", "--mode", "include")
    # The fields not given are kept: the API replaces a calendar whole, so the command sends the stored ones.
    assert (renamed["name"], renamed["mode"], renamed["version"]) == ("weekend off", "include", 2)
    assert (renamed["timezone"], renamed["windows"]) == (created["timezone"], created["windows"])
    windows = {"windows": [{"dates": ["2026-12-25"]}]}
    moved = cli.json("calendars", "update", created["id"], "--file", _file(tmp_path, windows, "w.json"))
    assert (moved["name"], moved["windows"]) == ("weekend off", [{"dates": ["2026-12-25"]}])

    assert cli("calendars", "delete", created["id"]).exit_code == 0
    assert cli("calendars", "get", created["id"]).exit_code == 1
    assert cli.json("calendars", "list")["items"] == []


def test_calendars_update_with_nothing_to_change_is_a_usage_error(cli, tmp_path):
    created = cli.json("calendars", "create", "--file", _file(tmp_path, WEEKEND))
    cli.transport.sent.clear()
    result = cli("calendars", "update", created["id"])
    assert result.exit_code == 2
    assert "nothing to change" in result.stderr
    assert cli.transport.sent == []


def test_calendars_update_of_an_unknown_calendar_is_a_404(cli):
    result = cli("calendars", "update", "c" + "0" * 25, "--name", "x")
    assert result.exit_code == 1
    assert "Error 404" in result.stderr


def test_calendars_update_refused_by_the_api_names_the_field(cli, tmp_path):
    created = cli.json("calendars", "create", "--file", _file(tmp_path, WEEKEND))
    result = cli("calendars", "update", created["id"], "--mode", "sometimes")
    assert result.exit_code == 1
    assert "mode" in result.stderr
    assert cli.json("calendars", "get", created["id"])["version"] == 1


def test_freezes_create_list_get_and_lift(cli):
    created = cli.json("freezes", "create", "--for", "1h", "--tag", "team=payments", "--reason", "deploy 1.42")
    listed = cli.json("freezes", "list")["items"]
    assert [f["id"] for f in listed] == [created["id"]]
    table = cli("freezes", "list", output="table").stdout.splitlines()
    assert table[0].split() == ["ID", "SELECTOR", "FROM", "UNTIL", "ON", "BLOCKED", "LIFTED", "REASON"]
    row = table[1]
    assert row.startswith(created["id"])
    assert "tags team=payments" in row
    assert row.endswith("deploy 1.42")
    assert cli.json("freezes", "get", created["id"]) == created
    lifted = cli.json("freezes", "lift", created["id"])
    assert lifted["lifted_at"] == "2026-11-21T12:00:00.000Z"
    assert cli.json("freezes", "get", created["id"])["lifted_at"] == lifted["lifted_at"]


def test_freezes_get_of_an_unknown_freeze_is_a_404(cli):
    result = cli("freezes", "get", "f" + "0" * 25)
    assert result.exit_code == 1
    assert "Error 404" in result.stderr


def test_the_old_verbs_still_work_and_are_not_listed(cli, tmp_path):
    freeze_id = cli("freeze", "--for", "30m", "--all", "--reason", "r", output=None).stdout.strip()
    assert cli.json("freezes", "get", freeze_id)["reason"] == "r"
    assert cli.json("unfreeze", freeze_id)["lifted_at"] is not None
    created = cli.json("calendars", "create", "--file", _file(tmp_path, WEEKEND))
    replaced = cli.json("calendars", "replace", created["id"], "--file", _file(tmp_path, {**WEEKEND, "name": "n"}))
    assert (replaced["name"], replaced["version"]) == ("n", 2)

    top = _help(cli)
    assert "freezes" in top
    assert " freeze " not in top
    assert "unfreeze" not in top
    calendars = _help(cli, "calendars")
    assert "update" in calendars
    assert "replace" not in calendars


def test_the_noun_groups_have_the_verbs_jobs_have(cli):
    from tickwork_cli.main import app
    from typer.main import get_command

    groups = get_command(app).commands  # type: ignore[attr-defined]
    listed = {
        noun: {name for name, command in groups[noun].commands.items() if not command.hidden}
        for noun in ("calendars", "freezes")
    }
    assert listed == {
        "calendars": {"list", "get", "create", "update", "delete", "blocked"},
        "freezes": {"list", "get", "create", "lift"},
    }


def test_jobs_preview_table_shows_what_blocks_an_occurrence(cli, tmp_path):
    calendar = cli.json("calendars", "create", "--file", _file(tmp_path, WEEKEND))
    job = cli.json(
        "jobs", "create", "--name", "n", "--type", "echo", "--cron", "0 9 * * *", "--calendar", calendar["id"]
    )
    shown = cli("jobs", "preview", job["id"], "--count", "3", output="table")
    assert shown.exit_code == 0, shown.output
    header, *rows = shown.stdout.splitlines()
    assert header.split() == ["AT", "(UTC)", "LOCAL", "DST", "BLOCKED"]
    assert rows[0].split()[0] == "2026-11-22T09:00:00.000Z"
    assert rows[0].endswith(f"calendar {calendar['id']} (skip)")
    assert rows[1].split() == ["2026-11-23T09:00:00.000Z", "2026-11-23T09:00:00.000Z"]  # not blocked

    deferred = cli.json("jobs", "update", job["id"], "--on-blocked", "DEFER")
    shown = cli("jobs", "preview", deferred["id"], "--count", "1", output="table")
    assert shown.stdout.splitlines()[1].endswith(f"calendar {calendar['id']} (runs at 2026-11-23T00:00:00.000Z)")


def test_calendars_blocked_lists_the_spans_it_blocks_from_now(cli, tmp_path):
    calendar = cli.json("calendars", "create", "--file", _file(tmp_path, WEEKEND))
    found = cli.json("calendars", "blocked", calendar["id"], "--days", "3")
    assert found["complete"]
    assert [span["until"] for span in found["spans"]] == ["2026-11-23T00:00:00.000Z"]
    assert found["spans"][0]["from"] == found["from"]  # blocked now: from now
    table = cli("calendars", "blocked", calendar["id"], output="table")
    assert table.exit_code == 0, table.output
    assert [line.split() for line in table.stdout.splitlines()] == [
        ["FROM", "UNTIL"],
        [found["from"], found["spans"][0]["until"]],
    ]
    assert cli.json("calendars", "blocked", calendar["id"], "--from", "+2d")["spans"] == []  # from the 23rd on
