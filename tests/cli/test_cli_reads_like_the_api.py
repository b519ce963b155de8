"""The CLI as a daily tool (issue 27): every job field from a flag or `--file`, `workflows update`, one spelling
per option and verb (the old one a hidden alias), `now` and relative times wherever an instant is taken, and
tables people can read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.test_workflow_routes import DIAMOND

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _create(cli, *extra: str) -> dict[str, Any]:
    return cli.json("jobs", "create", "--name", "hello", "--type", "echo", *extra)  # type: ignore[no-any-return]


def _file(tmp_path, content: Any, name: str = "body.json") -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def _bodies(cli, method: str) -> list[Any]:
    return [json.loads(body) for m, _, _, body in cli.transport.sent if m == method and body is not None]


# ---------------------------------------------------------------- concurrency, rate limit, --file


def test_create_and_update_set_a_concurrency_key_and_a_rate_limit(cli):
    job = _create(cli, "--rate", "1 hour", "--concurrency", "db=2", "--rate-limit", "partner-api=5/s")
    assert job["concurrency"] == {"key": "db", "limit": 2}
    assert job["rate_limit"] == {"key": "partner-api", "per_second": 5.0}
    updated = cli.json("jobs", "update", job["id"], "--rate-limit", "partner-api=30/min", "--concurrency", "a=b=1")
    assert updated["rate_limit"] == {"key": "partner-api", "per_minute": 30.0}
    assert updated["concurrency"] == {"key": "a=b", "limit": 1}  # the last `=` ends the key


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "db"], "--concurrency must be KEY=LIMIT"),
        (["--concurrency", "db=two"], "--concurrency must be KEY=LIMIT"),
        (["--rate-limit", "api=5"], "--rate-limit must be KEY=N/s or KEY=N/min"),
        (["--rate-limit", "api=5/h"], "--rate-limit must be KEY=N/s or KEY=N/min"),
    ],
)
def test_a_malformed_limit_is_a_usage_error_without_calling_the_api(cli, args, message):
    result = cli("jobs", "create", "--name", "x", "--type", "echo", "--rate", "1 hour", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert cli.transport.sent == []


def test_create_from_a_file_with_flags_overriding_its_fields(cli, tmp_path):
    body = {
        "name": "from-file",
        "type": "echo",
        "payload": {"n": 1},
        "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"},
        "retry": {"max_attempts": 5, "backoff_seconds": 2},
        "tags": {"team": "data"},
        "concurrency": {"key": "db", "limit": 3},
    }
    job = cli.json(
        "jobs", "create", "--file", _file(tmp_path, body), "--name", "from-flags", "--max-attempts", "2",
        "--tag", "env=prod", "--timezone", "America/New_York",
    )  # fmt: skip
    assert job["name"] == "from-flags"
    assert job["type"] == "echo"
    assert job["payload"] == {"n": 1}
    assert (job["schedule"]["cron"], job["schedule"]["timezone"]) == ("0 2 * * *", "America/New_York")
    assert job["retry"]["max_attempts"] == 2
    assert job["retry"]["backoff_seconds"] == 2.0
    assert job["tags"] == {"team": "data", "env": "prod"}
    assert job["concurrency"] == {"key": "db", "limit": 3}


def test_a_schedule_kind_flag_replaces_the_files_whole_schedule(cli, tmp_path):
    body = {"name": "n", "type": "echo", "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"}}
    job = cli.json("jobs", "create", "--file", _file(tmp_path, body), "--rate", "1 hour")
    assert job["schedule"]["rate"] == "1 hour"
    assert job["schedule"]["cron"] is None
    assert job["schedule"]["timezone"] == "UTC"


def test_update_from_a_file(cli, tmp_path):
    job = _create(cli, "--rate", "1 hour")
    patch = {"priority": 7, "rate_limit": {"key": "k", "per_minute": 10}}
    updated = cli.json("jobs", "update", job["id"], "--file", _file(tmp_path, patch), "--priority", "8")
    assert updated["priority"] == 8
    assert updated["rate_limit"] == {"key": "k", "per_minute": 10.0}


def test_an_unknown_field_in_the_file_is_refused_naming_it_and_creates_nothing(cli, tmp_path):
    body = {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "colour": "blue"}
    result = cli("jobs", "create", "--file", _file(tmp_path, body))
    assert result.exit_code == 1
    assert "Error 422" in result.stderr
    assert "colour" in result.stderr
    assert cli.json("jobs", "list")["items"] == []


@pytest.mark.parametrize(
    ("content", "message"),
    [("{oops", "--file: not valid JSON"), ("[1]", "--file: must hold a JSON object"), (None, "--file: cannot read")],
)
def test_a_job_file_that_is_no_json_object_is_a_usage_error_without_calling_the_api(cli, tmp_path, content, message):
    path = str(tmp_path / "missing.json") if content is None else _file(tmp_path, content)
    for argv in (["jobs", "create", "--file", path], ["jobs", "update", "j" + "0" * 25, "--file", path]):
        result = cli(*argv)
        assert result.exit_code == 2, argv
        assert message in result.stderr
    assert cli.transport.sent == []


def test_create_without_a_name_or_type_anywhere_is_a_usage_error(cli, tmp_path):
    result = cli("jobs", "create", "--file", _file(tmp_path, {"type": "echo"}), "--rate", "1 hour")
    assert result.exit_code == 2
    assert "--name" in result.stderr
    result = cli("jobs", "create", "--name", "n", "--rate", "1 hour")
    assert result.exit_code == 2
    assert "--type" in result.stderr
    assert cli.transport.sent == []


# ---------------------------------------------------------------- workflows update


def test_workflows_update_changes_a_workflow_by_flags_and_by_file(cli, tmp_path):
    workflow = cli.json("workflows", "create", "--file", _file(tmp_path, DIAMOND, "w.json"))
    renamed = cli.json(
        "workflows", "update", workflow["id"], "--name", "nightly", "--cron", "0 3 * * *", "--timezone", "UTC",
        "--priority", "7", "--max-attempts", "4", "--tag", "team=data",
    )  # fmt: skip
    assert renamed["name"] == "nightly"
    assert (renamed["schedule"]["cron"], renamed["schedule"]["timezone"]) == ("0 3 * * *", "UTC")
    assert renamed["next_run_at"] == "2026-11-22T03:00:00.000Z"
    assert renamed["priority"] == 7
    assert renamed["retry"]["max_attempts"] == 4
    assert renamed["tags"] == {"team": "data"}
    steps = [{"id": "only", "type": "echo", "payload": {"x": 1}}]
    restepped = cli.json("workflows", "update", workflow["id"], "--file", _file(tmp_path, {"steps": steps}))
    assert [s["id"] for s in restepped["steps"]] == ["only"]
    assert _bodies(cli, "PATCH")[-1] == {"steps": steps}


def test_workflows_update_only_the_zone_keeps_the_cron(cli, tmp_path):
    workflow = cli.json("workflows", "create", "--file", _file(tmp_path, DIAMOND, "w.json"))
    updated = cli.json("workflows", "update", workflow["id"], "--timezone", "America/New_York")
    assert updated["schedule"]["cron"] == DIAMOND["schedule"]["cron"]
    assert updated["schedule"]["timezone"] == "America/New_York"


def test_workflows_update_with_nothing_to_change_is_a_usage_error(cli, tmp_path):
    workflow = cli.json("workflows", "create", "--file", _file(tmp_path, DIAMOND, "w.json"))
    result = cli("workflows", "update", workflow["id"])
    assert result.exit_code == 2
    assert "nothing to change" in result.stderr
    assert _bodies(cli, "PATCH") == []


def test_workflows_update_of_an_unknown_workflow_is_a_404(cli):
    result = cli("workflows", "update", "w" + "0" * 25, "--name", "x")
    assert result.exit_code == 1
    assert "Error 404" in result.stderr


# ---------------------------------------------------------------- one spelling, the old one a hidden alias


def _help(cli, *argv: str) -> str:
    from tickwork_cli.main import app

    return cli.runner.invoke(app, [*argv, "--help"], terminal_width=200).stdout  # type: ignore[no-any-return]


def test_timezone_is_the_option_and_tz_a_hidden_alias_that_still_works(cli):
    job = _create(cli, "--cron", "0 9 * * *", "--tz", "Europe/Paris")
    assert job["schedule"]["timezone"] == "Europe/Paris"
    updated = cli.json("jobs", "update", job["id"], "--tz", "America/New_York")
    assert updated["schedule"]["timezone"] == "America/New_York"
    preview = cli.json("schedules", "preview", "--cron", "0 9 * * *", "--tz", "Asia/Tokyo", "--count", "1")
    assert preview["items"][0]["at"] == "2026-11-22T00:00:00.000Z"
    for argv in (["jobs", "create"], ["jobs", "update"], ["schedules", "preview"], ["workflows", "update"]):
        shown = _help(cli, *argv)
        assert "--timezone" in shown, argv
        assert "--tz" not in shown, argv


def test_timezone_and_tz_together_must_agree(cli):
    result = cli("jobs", "create", "--name", "n", "--type", "echo", "--cron", "0 9 * * *",
                 "--timezone", "UTC", "--tz", "Europe/Paris")  # fmt: skip
    assert result.exit_code == 2
    assert "--tz" in result.stderr
    assert cli.transport.sent == []


def test_workflow_runs_is_the_noun_and_the_old_workflows_verbs_hidden_aliases_that_still_work(cli, tmp_path):
    workflow = cli.json("workflows", "create", "--file", _file(tmp_path, DIAMOND, "w.json"))
    run = cli.json("workflows", "trigger", workflow["id"])
    assert cli.json("workflow-runs", "get", run["id"])["id"] == run["id"]
    assert cli.json("workflows", "get-run", run["id"])["id"] == run["id"]
    assert cli.json("workflows", "show-run", run["id"])["id"] == run["id"]
    assert [r["id"] for r in cli.json("workflows", "runs", workflow["id"])["items"]] == [run["id"]]
    assert cli.json("workflows", "cancel-run", run["id"])["status"] == "CANCELLED"
    retried = cli("workflows", "retry-run", run["id"])  # only a FAILED run is retried: the API's 409, not a usage error
    assert retried.exit_code == 1
    assert "Error 409" in retried.stderr
    from tickwork_cli.main import app
    from typer.main import get_command

    commands = get_command(app).commands  # type: ignore[attr-defined]
    hidden = {name for name, command in commands["workflows"].commands.items() if command.hidden}
    assert hidden == {"runs", "get-run", "show-run", "cancel-run", "retry-run"}
    assert not commands["workflow-runs"].hidden


# ---------------------------------------------------------------- now and relative times


def test_backfill_to_now_is_accepted(cli):
    job = _create(cli, "--cron", "0 * * * *")
    done = cli.json("jobs", "backfill", job["id"], "--from", "-3h", "--to", "now")
    assert done["created"] == 4  # 09:00 to 12:00, now included


def test_now_and_relative_times_are_taken_wherever_an_instant_is(cli):
    job = _create(cli, "--rate", "1 hour", "--start-at", "now", "--end-at", "+1d2h")
    assert job["schedule"]["start_at"] == "2026-11-21T12:00:00.000Z"
    assert job["schedule"]["end_at"] == "2026-11-22T14:00:00.000Z"
    one_shot = _create(cli, "--at", "+1h30m")
    assert one_shot["next_run_at"] == "2026-11-21T13:30:00.000Z"
    preview = cli.json("schedules", "preview", "--rate", "1 hour", "--from", "NOW", "--count", "1")
    assert preview["items"][0]["at"] == "2026-11-21T13:00:00.000Z"


def test_parse_instant_now_relative_compound_and_absolute():
    from datetime import UTC, datetime

    from tickwork_cli.clock import parse_at

    now = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert parse_at("now", current=now) == "2026-11-21T12:00:00.000Z"
    assert parse_at("-1h", current=now) == "2026-11-21T11:00:00.000Z"
    assert parse_at("+1h30m", current=now) == "2026-11-21T13:30:00.000Z"
    assert parse_at("+1w", current=now) == "2026-11-28T12:00:00.000Z"
    assert parse_at("+10", current=now) == "2026-11-21T12:00:10.000Z"
    assert parse_at("2026-12-01T09:00:00Z", current=now) == "2026-12-01T09:00:00Z"


@pytest.mark.parametrize(
    "argv",
    [
        ["jobs", "create", "--name", "n", "--type", "echo", "--at", "+10x"],
        ["jobs", "create", "--name", "n", "--type", "echo", "--rate", "1 hour", "--start-at", "+"],
        ["jobs", "backfill", "j" + "0" * 25, "--from", "-1y", "--to", "now"],
        ["schedules", "preview", "--rate", "1 hour", "--from", "+1h-2m"],
        ["workflows", "update", "w" + "0" * 25, "--at", "+ten minutes"],
    ],
)
def test_a_bad_relative_time_is_a_usage_error_naming_the_option(cli, argv):
    result = cli(*argv)
    assert result.exit_code == 2
    option = next(a for a in argv if a in ("--at", "--start-at", "--from"))
    assert f"{option}: " in result.stderr
    assert "+10s" in result.stderr  # says what a relative time looks like
    assert cli.transport.sent == []


# ---------------------------------------------------------------- a rate takes no zone


@pytest.mark.parametrize(
    "argv",
    [
        ["jobs", "create", "--name", "n", "--type", "echo", "--rate", "5 minutes", "--tz", "Europe/Paris"],
        ["jobs", "create", "--name", "n", "--type", "echo", "--rate", "5 minutes", "--timezone", "Europe/Paris"],
    ],
)
def test_a_rate_with_a_time_zone_is_refused_naming_both_options(cli, argv):
    result = cli(*argv)
    assert result.exit_code == 2
    assert "--rate" in result.stderr
    assert "--timezone" in result.stderr
    assert cli.transport.sent == []


def test_a_zone_for_a_rate_job_is_refused_on_update_too(cli, tmp_path):
    job = _create(cli, "--rate", "5 minutes")
    result = cli("jobs", "update", job["id"], "--timezone", "Europe/Paris")
    assert result.exit_code == 2
    assert "--timezone" in result.stderr
    assert _bodies(cli, "PATCH") == []
    body = {"name": "n", "type": "echo", "schedule": {"rate": "5 minutes"}}
    refused = cli("jobs", "create", "--file", _file(tmp_path, body), "--timezone", "Europe/Paris")
    assert refused.exit_code == 2
    assert "--rate" in refused.stderr
