"""`tickwork` against the real API handler (typer's runner; the HTTP hop replaced by an in-process transport)."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import ACME

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _create(cli, *extra):
    return cli.json("jobs", "create", "--name", "hello", "--type", "echo", *extra)


def test_the_worked_example_create_an_echo_job_and_watch_its_run(cli):
    job = _create(cli, "--at", "+300s", "--payload", '{"hello": "world"}')
    assert job["next_run_at"] == "2026-11-21T12:05:00.000Z"
    # --wait polls; meanwhile (in the test, each poll's sleep) time passes and the scheduler works. One poll
    # of 300 s lands on the run's time, so the tick sends it with no delay (moto's SQS delays are real time).
    waited = cli("runs", "list", job["id"], "--wait", "--interval", "300", "--wait-timeout", "600", output="table")
    assert waited.exit_code == 0, waited.output
    assert "waiting: no runs yet" in waited.stderr
    lines = waited.stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "STATUS", "SCHEDULED"]
    assert "SUCCEEDED" in lines[1]
    run_id = lines[1].split()[0]
    result = cli("runs", "result", run_id)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"hello": "world"}
    run = cli.json("runs", "get", run_id)
    assert run["status"] == "SUCCEEDED"
    assert run["scheduled_for"] == "2026-11-21T12:05:00.000Z"


def test_wait_gives_up_with_a_distinct_exit_status(cli):
    job = _create(cli, "--rate", "1 day")
    waited = cli("runs", "list", job["id"], "--wait", "--interval", "1", "--wait-timeout", "3")
    assert waited.exit_code == 3
    assert "unfinished" in waited.stderr


def test_create_with_every_option(cli, tmp_path):
    payload = tmp_path / "payload.json"
    payload.write_text('{"n": 1}')
    job = cli.json(
        "jobs", "create", "--name", "nightly", "--type", "echo",
        "--cron", "0 2 * * *", "--tz", "Europe/Paris", "--payload-file", str(payload),
        "--priority", "8", "--max-attempts", "5", "--backoff", "3", "--max-backoff", "60",
        "--timeout", "30", "--misfire-grace", "120", "--tag", "team=data", "--tag", "env=prod",
    )  # fmt: skip
    assert job["schedule"]["cron"] == "0 2 * * *"
    assert job["schedule"]["timezone"] == "Europe/Paris"
    assert job["next_run_at"] == "2026-11-22T01:00:00.000Z"
    assert job["payload"] == {"n": 1}
    assert job["priority"] == 8
    assert job["retry"] == {"max_attempts": 5, "backoff_seconds": 3.0, "max_backoff_seconds": 60.0}
    assert (job["timeout_seconds"], job["misfire_grace_seconds"]) == (30, 120)
    assert job["tags"] == {"team": "data", "env": "prod"}


def test_deadline_notify_and_max_run_seconds_have_flags(cli):
    job = cli.json(
        "jobs", "create", "--name", "report", "--type", "echo", "--cron", "0 2 * * *",
        "--max-run-seconds", "900", "--deadline", "1h10m", "--on-deadline-miss", "CANCEL",
        "--notify", "Run Failed", "--notify", "Deadline Missed",
    )  # fmt: skip
    assert job["max_run_seconds"] == 900
    assert job["deadline"] == {"within_seconds": 4200, "on_miss": "CANCEL"}
    assert job["notify"] == ["Run Failed", "Deadline Missed"]
    updated = cli.json("jobs", "update", job["id"], "--deadline", "3600", "--notify", "none")
    assert updated["deadline"] == {"within_seconds": 3600, "on_miss": "ALERT"}
    assert updated["notify"] == []
    refused = cli("jobs", "update", job["id"], "--notify", "Run Exploded")
    assert refused.exit_code == 1
    assert "notify[0]" in refused.stderr
    bad = cli("jobs", "update", job["id"], "--deadline", "soon")
    assert bad.exit_code == 2
    assert "--deadline" in bad.stderr


def test_lifecycle_commands(cli):
    job = _create(cli, "--rate", "1 hour")
    assert cli.json("jobs", "get", job["id"])["id"] == job["id"]
    assert cli.json("jobs", "pause", job["id"])["state"] == "PAUSED"
    assert cli.json("jobs", "resume", job["id"])["state"] == "ACTIVE"
    updated = cli.json("jobs", "update", job["id"], "--name", "renamed", "--rate", "5 minutes", "--priority", "9")
    assert (updated["name"], updated["schedule"]["rate"], updated["priority"]) == ("renamed", "5 minutes", 9)
    assert updated["next_run_at"] == "2026-11-21T12:05:00.000Z"
    run = cli.json("jobs", "trigger", job["id"])
    assert run["status"] == "QUEUED"
    assert cli.json("jobs", "cancel", job["id"])["state"] == "CANCELLED"
    assert cli.json("jobs", "cancel", job["id"])["state"] == "CANCELLED"


def test_update_of_only_the_zone_keeps_the_schedule_kind(cli):
    job = _create(cli, "--cron", "0 9 * * *")
    updated = cli.json("jobs", "update", job["id"], "--tz", "America/New_York")
    assert updated["schedule"]["cron"] == "0 9 * * *"
    assert updated["schedule"]["timezone"] == "America/New_York"
    assert updated["next_run_at"] == "2026-11-21T14:00:00.000Z"


def test_update_with_nothing_to_change_is_a_usage_error(cli):
    job = _create(cli, "--rate", "1 hour")
    result = cli("jobs", "update", job["id"])
    assert result.exit_code == 2
    assert "nothing to change" in result.stderr


def test_lists_follow_cursors_with_all(cli):
    ids = []
    for _ in range(3):
        ids.append(_create(cli, "--rate", "1 hour")["id"])
        cli.pipeline.clock.advance(0.001)
    one = cli.json("jobs", "list", "--limit", "1")
    assert len(one["items"]) == 1
    assert one["next_cursor"]
    every = cli.json("jobs", "list", "--limit", "1", "--all")
    assert [j["id"] for j in every["items"]] == ids[::-1]
    assert every["next_cursor"] is None
    second = cli.json("jobs", "list", "--limit", "1", "--cursor", one["next_cursor"])
    assert [j["id"] for j in second["items"]] == [ids[1]]
    table = cli("jobs", "list", "--limit", "1", output="table")
    assert table.stdout.splitlines()[0].split()[:4] == ["ID", "NAME", "TYPE", "STATE"]
    assert "more: --cursor" in table.stderr


def test_runs_retry_and_dlq(cli):
    job = _create(cli, "--rate", "1 hour", "--payload", '{"fail_attempts": 9}', "--max-attempts", "1")
    run = cli.json("jobs", "trigger", job["id"])
    cli.pipeline.drain()
    assert cli.json("runs", "get", run["id"])["status"] == "FAILED"
    dlq = cli.json("dlq", "list")
    assert [r["id"] for r in dlq["items"]] == [run["id"]]
    table = cli("dlq", "list", output="table")
    assert "fails on purpose" in table.stdout
    assert cli.json("runs", "retry", run["id"])["status"] == "QUEUED"
    cli.pipeline.drain()
    assert cli.json("dlq", "redrive", run["id"])["not_redriven"] == []
    cli.pipeline.drain()  # fails again
    redrive = cli("dlq", "redrive", "--all", output="table")
    assert redrive.exit_code == 0
    assert redrive.stdout.startswith("redriven: 1")
    assert cli.json("dlq", "list")["items"] == []
    runs = cli.json("runs", "list", job["id"], "--status", "QUEUED")
    assert [r["id"] for r in runs["items"]] == [run["id"]]


def _failed(cli) -> dict:
    job = _create(cli, "--rate", "1 hour", "--payload", '{"fail_attempts": 9}', "--max-attempts", "1")
    run = cli.json("jobs", "trigger", job["id"])
    cli.pipeline.drain()
    return run


def _redrives_sent(cli) -> list[object]:
    return [json.loads(body) for _, url, _, body in cli.transport.sent if url.endswith("/v1/dlq/redrive")]


def test_dlq_redrive_without_ids_off_a_terminal_requires_all(cli):
    run = _failed(cli)
    result = cli("dlq", "redrive")
    assert result.exit_code == 2
    assert "--all" in result.stderr
    assert _redrives_sent(cli) == []
    assert cli.json("runs", "get", run["id"])["status"] == "FAILED"

    assert cli.json("dlq", "redrive", "--all")["run_ids"] == [run["id"]]
    assert _redrives_sent(cli) == [{"all": True}]


def test_dlq_redrive_without_ids_on_a_terminal_asks_first(cli, monkeypatch):
    from tickwork_cli.commands import dlq

    monkeypatch.setattr(dlq, "on_a_terminal", lambda: True)
    run = _failed(cli)
    declined = cli("dlq", "redrive", input="n\n")
    assert declined.exit_code == 1
    assert "Re-queue every FAILED run?" in declined.stderr
    assert _redrives_sent(cli) == []
    assert cli.json("runs", "get", run["id"])["status"] == "FAILED"

    accepted = cli("dlq", "redrive", input="y\n")
    assert accepted.exit_code == 0, accepted.stderr
    answer = accepted.stdout[accepted.stdout.index("{") :]  # typer's runner echoes the typed "y" to stdout
    assert json.loads(answer)["run_ids"] == [run["id"]]
    assert _redrives_sent(cli) == [{"all": True}]


def test_dlq_redrive_of_named_runs_and_all_at_once_is_a_usage_error(cli):
    run = _failed(cli)
    result = cli("dlq", "redrive", run["id"], "--all")
    assert result.exit_code == 2
    assert "not both" in result.stderr
    assert _redrives_sent(cli) == []
    assert cli.json("dlq", "redrive", run["id"])["run_ids"] == [run["id"]]
    assert _redrives_sent(cli) == [{"run_ids": [run["id"]]}]


def test_problem_details_are_printed_readably_with_a_non_zero_exit(cli):
    result = cli("jobs", "create", "--name", "x", "--type", "echo", "--cron", "not a cron", "--priority", "12")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == "Error 422 Invalid input"
    assert "schedule.cron" in result.stderr
    assert "priority" in result.stderr
    missing = cli("jobs", "get", "j" + "0" * 25)
    assert missing.exit_code == 1
    assert missing.stderr.startswith("Error 404 Not found")
    conflict_job = _create(cli, "--rate", "1 hour")
    cli("jobs", "cancel", conflict_job["id"])
    conflict = cli("jobs", "resume", conflict_job["id"])
    assert conflict.exit_code == 1
    assert "Error 409 Conflict" in conflict.stderr
    assert "cannot resume a CANCELLED job" in conflict.stderr


def test_idempotency_key(cli):
    first = _create(cli, "--rate", "1 hour", "--idempotency-key", "deploy-7")
    again = _create(cli, "--rate", "1 hour", "--idempotency-key", "deploy-7")
    assert again["id"] == first["id"]
    other = cli(
        "jobs", "create", "--name", "other", "--type", "echo", "--rate", "1 hour", "--idempotency-key", "deploy-7"
    )
    assert other.exit_code == 1
    assert "Idempotency-Key" in other.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--payload", "{oops"], "--payload: not valid JSON"),
        (["--payload", "[1]"], "--payload: must hold a JSON object"),
        (["--payload", "{}", "--payload-file", "x.json"], "not both"),
        (["--tag", "novalue"], "--tag must be key=value"),
    ],
)
def test_local_usage_errors_exit_2_without_calling_the_api(cli, args, message):
    result = cli("jobs", "create", "--name", "x", "--type", "echo", "--rate", "1 hour", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert cli.transport.sent == []


def test_no_api_url_is_a_usage_error(cli, monkeypatch):
    from tickwork_cli.main import app

    result = cli.runner.invoke(app, ["jobs", "list"])
    assert result.exit_code == 2
    assert "TICKWORK_API_URL" in result.stderr
    monkeypatch.setenv("TICKWORK_API_URL", cli.url)
    assert cli.runner.invoke(app, ["jobs", "list"]).exit_code == 0


def test_a_local_api_with_keys(cli, monkeypatch, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text('{"secret-acme": "acme"}')
    monkeypatch.setenv("API_KEYS_FILE", str(keys))
    refused = cli("jobs", "list")
    assert refused.exit_code == 1
    assert "Error 401" in refused.stderr
    job = _create(cli, "--rate", "1 hour", "--api-key", "secret-acme")
    assert job["tenant"] == "acme"
    assert cli.transport.sent[-1][2]["X-Api-Key"] == "secret-acme"
    assert "Authorization" not in cli.transport.sent[-1][2]


def test_a_deployed_api_is_called_with_sigv4(cli, monkeypatch):
    monkeypatch.setenv("API_AUTH_MODE", "iam")
    cli.transport.identity = ACME  # what API Gateway derives from a valid signature
    cli.url = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
    job = _create(cli, "--rate", "1 hour")
    assert job["tenant"] == "acme"
    method, url, headers, _ = cli.transport.sent[-1]
    assert (method, url) == ("POST", "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1/jobs")
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
    assert "/eu-west-1/execute-api/aws4_request" in headers["Authorization"]
    assert "SignedHeaders=" in headers["Authorization"]
    assert headers["X-Amz-Security-Token"] == "testing"
    assert "X-Amz-Date" in headers
    got = cli.json("jobs", "get", job["id"])
    assert got["id"] == job["id"]
    listed = cli.transport.sent[-1]
    assert listed[2]["Authorization"].startswith("AWS4-HMAC-SHA256")


def test_signing_needs_credentials(cli, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    cli.url = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
    result = cli("jobs", "list")
    assert result.exit_code == 2
    assert "no AWS credentials" in result.stderr
    assert cli.transport.sent == []


def test_parse_at_relative_and_absolute():
    from datetime import UTC, datetime

    from tickwork_cli.clock import parse_at

    now = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert parse_at("+10s", now) == "2026-11-21T12:00:10.000Z"
    assert parse_at("+1.5m", now) == "2026-11-21T12:01:30.000Z"
    assert parse_at("+2h", now) == "2026-11-21T14:00:00.000Z"
    assert parse_at("+250ms", now) == "2026-11-21T12:00:00.250Z"
    assert parse_at("2026-12-01T09:00:00Z", now) == "2026-12-01T09:00:00Z"


def test_the_dev_command_name_is_reserved():
    from tickwork_cli.main import app
    from typer.main import get_command

    assert {"jobs", "runs", "dlq"} <= set(get_command(app).commands)  # type: ignore[attr-defined]


def test_shared_options_keep_their_place_in_every_command():
    """The option groups are declared once, yet each command lists them where --help always has: --api-url
    after what the command requires, the other session options last, a job's fields together."""
    from tickwork_cli.main import app
    from typer.main import get_command

    session_tail = ["--output", "--api-key", "--profile", "--region", "--token"]
    groups = get_command(app).commands  # type: ignore[attr-defined]
    for group in ("jobs", "runs", "dlq"):
        for name, command in groups[group].commands.items():
            flags = [p.opts[0] for p in command.params if p.param_type_name == "option"]
            assert flags[-5:] == session_tail, (group, name, flags)
            assert flags.count("--api-url") == 1, (group, name, flags)
    create = [p.opts[0] for p in groups["jobs"].commands["create"].params]
    assert create[:4] == ["--name", "--type", "--api-url", "--at"]
    assert create[-7:-5] == ["--file", "--idempotency-key"]
    update = [p.opts[0] for p in groups["jobs"].commands["update"].params]
    assert update[:4] == ["job_id", "--api-url", "--name", "--at"]


def test_runs_cancel_asks_the_api_to_stop_the_run_and_shows_a_refusal_for_one_not_running(cli):
    job = _create(cli, "--rate", "1 hour")
    run = cli.json("jobs", "trigger", job["id"])
    refused = cli("runs", "cancel", run["id"])
    assert refused.exit_code != 0
    assert "409" in refused.stderr or "RUNNING" in refused.stderr, refused.stderr
    assert ("POST", f"{cli.url}/v1/runs/{run['id']}/cancel") in [(m, u) for m, u, _, _ in cli.transport.sent]
    assert cli.json("runs", "get", run["id"])["status"] == "QUEUED"  # nothing written


def test_a_token_is_sent_as_a_bearer_and_nothing_is_signed(cli, monkeypatch):
    """--token (TICKWORK_TOKEN), for the token API: no AWS credentials are needed, none are sent."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    cli.url = "https://f6g7h8i9j0.execute-api.eu-west-1.amazonaws.com"
    cli("jobs", "list", "--token", "eyJ.header.sig")
    monkeypatch.setenv("TICKWORK_TOKEN", "eyJ.from.env")
    cli("jobs", "list")
    sent = [headers for _, _, headers, _ in cli.transport.sent]
    assert [h["Authorization"] for h in sent] == ["Bearer eyJ.header.sig", "Bearer eyJ.from.env"]
    assert not [h for h in sent for name in h if name.lower().startswith("x-amz-")]
