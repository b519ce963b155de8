"""The `tickwork` command line: jobs, runs and the DLQ over the HTTP API; `tickwork dev` runs it all locally.

    tickwork jobs create --name hello --type echo --at +10s --payload '{"hello": "world"}'
    tickwork runs list <job id> --wait
    tickwork runs result <run id>

The API comes from --api-url or TICKWORK_API_URL. A deployed API is called with SigV4 from the normal AWS
credential chain; a local one (127.0.0.1) needs nothing, or --api-key when it was started with a keys file.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from tickwork_cli import render
from tickwork_cli.client import ApiError, Client, ConfigError

app = typer.Typer(help="Tickwork: a serverless job scheduler.", no_args_is_help=True)
jobs_app = typer.Typer(help="Create, list, change and run jobs.", no_args_is_help=True)
runs_app = typer.Typer(help="Runs of jobs: list, inspect, fetch results, retry.", no_args_is_help=True)
dlq_app = typer.Typer(help="FAILED runs: list and re-queue them.", no_args_is_help=True)
app.add_typer(jobs_app, name="jobs")
app.add_typer(runs_app, name="runs")
app.add_typer(dlq_app, name="dlq")

# `tickwork dev` lives with the local runtime (tickwork_local.cli), which registers itself here.
try:
    from tickwork_local.cli import register as _register_dev
except ImportError:  # pragma: no cover - the local runtime is not installed
    pass
else:
    _register_dev(app)

EXIT_API_ERROR = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
TERMINAL = {"SUCCEEDED", "FAILED", "SKIPPED"}
# Tests replace these to wait without sleeping, and to share the API's (fake) clock.
sleep: Callable[[float], None] = time.sleep


def now() -> datetime:
    return datetime.now(UTC)


class Output(StrEnum):
    table = "table"
    json = "json"


# ---------------------------------------------------------------- common options

ApiUrl = Annotated[
    str,
    typer.Option("--api-url", envvar="TICKWORK_API_URL", help="The API's base URL.", show_default=False),
]
OutputOpt = Annotated[
    Output | None,
    typer.Option("--output", "-o", help="table or json (default: table on a terminal, else json)."),
]
ApiKey = Annotated[
    str | None,
    typer.Option("--api-key", envvar="TICKWORK_API_KEY", help="X-Api-Key, for a local API started with keys."),
]
Profile = Annotated[str | None, typer.Option("--profile", envvar="AWS_PROFILE", help="AWS profile to sign with.")]
Region = Annotated[str | None, typer.Option("--region", help="Region to sign for (default: from the URL).")]
Limit = Annotated[int | None, typer.Option("--limit", min=1, max=100, help="Page size (1-100).")]
CursorOpt = Annotated[str | None, typer.Option("--cursor", help="Continue from a previous page's next_cursor.")]
AllPages = Annotated[bool, typer.Option("--all", help="Follow next_cursor to the end.")]

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(fn: F) -> F:
    """Problem details printed readably on stderr, and a non-zero exit status."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            typer.echo(exc.describe(), err=True)
            raise typer.Exit(EXIT_API_ERROR) from None
        except ConfigError as exc:
            typer.echo(f"tickwork: {exc}", err=True)
            raise typer.Exit(EXIT_USAGE) from None

    return wrapper  # type: ignore[return-value]


def _client(api_url: str, api_key: str | None, profile: str | None, region: str | None) -> Client:
    return Client(api_url, api_key=api_key, profile=profile, region=region)


def _mode(output: Output | None) -> Output:
    if output is not None:
        return output
    return Output.table if sys.stdout.isatty() else Output.json


def _show_one(item: Any, output: Output | None) -> None:
    if _mode(output) is Output.json or not isinstance(item, dict):
        typer.echo(render.as_json(item))
    else:
        typer.echo(render.record(item))


def _show_page(page: dict[str, Any], output: Output | None, columns: Any) -> None:
    if _mode(output) is Output.json:
        typer.echo(render.as_json(page))
        return
    typer.echo(render.items_table(page["items"], columns))
    if page.get("next_cursor"):
        typer.echo(f"more: --cursor {page['next_cursor']}", err=True)


def _listing(client: Client, path: str, all_pages: bool, **query: Any) -> dict[str, Any]:
    if all_pages:
        return {"items": list(client.pages(path, **query)), "next_cursor": None}
    page: dict[str, Any] = client.get(path, **query)
    return page


# ---------------------------------------------------------------- building requests

_RELATIVE = re.compile(r"^\+\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_at(value: str, current: datetime | None = None) -> str:
    """An absolute ISO-8601 time as given, or `+10s` / `+5m` / `+2h` / `+1d` from now (UTC, milliseconds)."""
    match = _RELATIVE.match(value.strip())
    if not match:
        return value
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    instant = (current or now()) + timedelta(seconds=seconds)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _payload(payload: str | None, payload_file: Path | None) -> dict[str, Any] | None:
    if payload is not None and payload_file is not None:
        raise ConfigError("give --payload or --payload-file, not both")
    if payload_file is not None:
        source, text = str(payload_file), sys.stdin.read() if str(payload_file) == "-" else payload_file.read_text()
    elif payload is not None:
        source, text = "--payload", payload
    else:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: must be a JSON object")
    return value


def _tags(tags: list[str] | None) -> dict[str, str] | None:
    if not tags:
        return None
    out = {}
    for tag in tags:
        key, sep, value = tag.partition("=")
        if not sep or not key:
            raise ConfigError(f"--tag must be key=value, not {tag!r}")
        out[key] = value
    return out


def _schedule(
    at: str | None, cron: str | None, rate: str | None, tz: str | None, start_at: str | None, end_at: str | None
) -> dict[str, Any]:
    schedule: dict[str, Any] = {}
    if at is not None:
        schedule["at"] = parse_at(at)
    if cron is not None:
        schedule["cron"] = cron
    if rate is not None:
        schedule["rate"] = rate
    if tz is not None:
        schedule["timezone"] = tz
    if start_at is not None:
        schedule["start_at"] = parse_at(start_at)
    if end_at is not None:
        schedule["end_at"] = parse_at(end_at)
    return schedule


def _retry(max_attempts: int | None, backoff: float | None, max_backoff: float | None) -> dict[str, Any] | None:
    retry = {
        k: v
        for k, v in (("max_attempts", max_attempts), ("backoff_seconds", backoff), ("max_backoff_seconds", max_backoff))
        if v is not None
    }
    return retry or None


At = Annotated[str | None, typer.Option("--at", help="Run once at this ISO-8601 time, or +10s / +5m / +2h from now.")]
Cron = Annotated[str | None, typer.Option("--cron", help="Cron: 5 fields, or 6 with seconds first.")]
Rate = Annotated[str | None, typer.Option("--rate", help='Fixed interval, e.g. "5 minutes".')]
Tz = Annotated[str | None, typer.Option("--tz", help="IANA time zone for --cron (default UTC).")]
StartAt = Annotated[str | None, typer.Option("--start-at", help="No occurrence before this time.")]
EndAt = Annotated[str | None, typer.Option("--end-at", help="No occurrence after this time.")]
Payload = Annotated[str | None, typer.Option("--payload", help="The payload, a JSON object.")]
PayloadFile = Annotated[
    Path | None, typer.Option("--payload-file", help="Read the payload (JSON object) from a file, or - for stdin.")
]
Priority = Annotated[int | None, typer.Option("--priority", help="0-9 (9 first).")]
MaxAttempts = Annotated[int | None, typer.Option("--max-attempts", help="Attempts before a run FAILS.")]
Backoff = Annotated[float | None, typer.Option("--backoff", help="First retry delay, seconds.")]
MaxBackoff = Annotated[float | None, typer.Option("--max-backoff", help="Longest retry delay, seconds.")]
Timeout = Annotated[int | None, typer.Option("--timeout", help="Run timeout, seconds.")]
MisfireGrace = Annotated[int | None, typer.Option("--misfire-grace", help="Seconds late a run may still start.")]
Tags = Annotated[list[str] | None, typer.Option("--tag", help="key=value; repeatable.")]


def _optional_fields(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


# ---------------------------------------------------------------- jobs


@jobs_app.command("create")
@handles_errors
def jobs_create(
    name: Annotated[str, typer.Option("--name", help="A name for people.")],
    job_type: Annotated[str, typer.Option("--type", help="echo, http, lambda, or a registered type.")],
    api_url: ApiUrl = "",
    at: At = None,
    cron: Cron = None,
    rate: Rate = None,
    tz: Tz = None,
    start_at: StartAt = None,
    end_at: EndAt = None,
    payload: Payload = None,
    payload_file: PayloadFile = None,
    priority: Priority = None,
    max_attempts: MaxAttempts = None,
    backoff: Backoff = None,
    max_backoff: MaxBackoff = None,
    timeout: Timeout = None,
    misfire_grace: MisfireGrace = None,
    tag: Tags = None,
    idempotency_key: Annotated[
        str | None, typer.Option("--idempotency-key", help="Retrying with the same key never creates twice.")
    ] = None,
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """Create a job."""
    spec: dict[str, Any] = {
        "name": name,
        "type": job_type,
        "payload": _payload(payload, payload_file) or {},
        "schedule": _schedule(at, cron, rate, tz, start_at, end_at),
        **_optional_fields(
            priority=priority,
            retry=_retry(max_attempts, backoff, max_backoff),
            timeout_seconds=timeout,
            misfire_grace_seconds=misfire_grace,
            tags=_tags(tag),
        ),
    }
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
    client = _client(api_url, api_key, profile, region)
    _show_one(client.post("/v1/jobs", spec, headers=headers), output)


@jobs_app.command("list")
@handles_errors
def jobs_list(
    api_url: ApiUrl = "",
    state: Annotated[str | None, typer.Option("--state", help="ACTIVE, PAUSED, CANCELLED or COMPLETED.")] = None,
    job_type: Annotated[str | None, typer.Option("--type", help="Only jobs of this type.")] = None,
    name_prefix: Annotated[str | None, typer.Option("--name-prefix", help="Only names starting so.")] = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """Your jobs, newest first."""
    client = _client(api_url, api_key, profile, region)
    page = _listing(
        client, "/v1/jobs", all_pages, state=state, type=job_type, name_prefix=name_prefix, limit=limit, cursor=cursor
    )
    _show_page(page, output, render.JOB_COLUMNS)


JobIdArg = Annotated[str, typer.Argument(help="The job id.")]
RunIdArg = Annotated[str, typer.Argument(help="The run id.")]


@jobs_app.command("get")
@handles_errors
def jobs_get(
    job_id: JobIdArg,
    api_url: ApiUrl = "",
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """One job."""
    _show_one(_client(api_url, api_key, profile, region).get(f"/v1/jobs/{job_id}"), output)


@jobs_app.command("update")
@handles_errors
def jobs_update(
    job_id: JobIdArg,
    api_url: ApiUrl = "",
    name: Annotated[str | None, typer.Option("--name", help="A new name.")] = None,
    at: At = None,
    cron: Cron = None,
    rate: Rate = None,
    tz: Tz = None,
    start_at: StartAt = None,
    end_at: EndAt = None,
    payload: Payload = None,
    payload_file: PayloadFile = None,
    priority: Priority = None,
    max_attempts: MaxAttempts = None,
    backoff: Backoff = None,
    max_backoff: MaxBackoff = None,
    timeout: Timeout = None,
    misfire_grace: MisfireGrace = None,
    tag: Tags = None,
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """Change a job; a new schedule recomputes its next occurrence."""
    client = _client(api_url, api_key, profile, region)
    change: dict[str, Any] = _optional_fields(
        name=name,
        payload=_payload(payload, payload_file),
        priority=priority,
        timeout_seconds=timeout,
        misfire_grace_seconds=misfire_grace,
        tags=_tags(tag),
    )
    schedule = _schedule(at, cron, rate, tz, start_at, end_at)
    if schedule:
        if not {"at", "cron", "rate"} & set(schedule):
            # Only the zone or the window changes: keep the kind the job has.
            current = client.get(f"/v1/jobs/{job_id}")["schedule"]
            schedule = {**{k: v for k, v in current.items() if v is not None}, **schedule}
        change["schedule"] = schedule
    retry = _retry(max_attempts, backoff, max_backoff)
    if retry:
        change["retry"] = retry
    if not change:
        raise ConfigError("nothing to change: give at least one option (see --help)")
    _show_one(client.patch(f"/v1/jobs/{job_id}", change), output)


def _job_action(action: str, doc: str) -> None:
    @handles_errors
    def command(
        job_id: JobIdArg,
        api_url: ApiUrl = "",
        output: OutputOpt = None,
        api_key: ApiKey = None,
        profile: Profile = None,
        region: Region = None,
    ) -> None:
        client = _client(api_url, api_key, profile, region)
        if action == "cancel":
            result = client.delete(f"/v1/jobs/{job_id}")
        else:
            result = client.post(f"/v1/jobs/{job_id}/{action}")
        _show_one(result, output)

    command.__doc__ = doc
    jobs_app.command(action)(command)


_job_action("pause", "Pause a job (idempotent).")
_job_action("resume", "Resume a paused job (idempotent); missed occurrences follow the misfire rule.")
_job_action("cancel", "Cancel a job (idempotent).")
_job_action("trigger", "Run a job now, once, outside its schedule.")


# ---------------------------------------------------------------- runs


@runs_app.command("list")
@handles_errors
def runs_list(
    job_id: JobIdArg,
    api_url: ApiUrl = "",
    status: Annotated[str | None, typer.Option("--status", help="Only runs with this status.")] = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="Poll until the job has a run and every run listed has finished.")
    ] = False,
    wait_timeout: Annotated[
        float, typer.Option("--wait-timeout", help="Give up waiting after this many seconds.")
    ] = 120,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls when waiting.")] = 1,
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """Runs of a job, newest first."""
    client = _client(api_url, api_key, profile, region)
    path = f"/v1/jobs/{job_id}/runs"
    page = _listing(client, path, all_pages, status=status, limit=limit, cursor=cursor)
    deadline = time.monotonic() + wait_timeout
    waited = 0.0
    said = ""
    while wait and not (page["items"] and all(r["status"] in TERMINAL for r in page["items"])):
        if time.monotonic() >= deadline or waited >= wait_timeout:
            _show_page(page, output, render.RUN_COLUMNS)
            typer.echo(f"tickwork: runs still unfinished after {wait_timeout:g} s", err=True)
            raise typer.Exit(EXIT_TIMEOUT)
        pending = sorted({r["status"] for r in page["items"] if r["status"] not in TERMINAL}) or ["no runs yet"]
        news = f"waiting: {', '.join(pending)}"
        if news != said:  # say it once, and again when it changes
            typer.echo(news, err=True)
            said = news
        sleep(interval)
        waited += interval
        page = _listing(client, path, all_pages, status=status, limit=limit, cursor=cursor)
    _show_page(page, output, render.RUN_COLUMNS)


@runs_app.command("get")
@handles_errors
def runs_get(
    run_id: RunIdArg,
    api_url: ApiUrl = "",
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """One run."""
    _show_one(_client(api_url, api_key, profile, region).get(f"/v1/runs/{run_id}"), output)


@runs_app.command("result")
@handles_errors
def runs_result(
    run_id: RunIdArg,
    api_url: ApiUrl = "",
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """The run's result document (JSON), as stored; JSON whatever --output says."""
    del output
    typer.echo(render.as_json(_client(api_url, api_key, profile, region).get(f"/v1/runs/{run_id}/result")))


@runs_app.command("retry")
@handles_errors
def runs_retry(
    run_id: RunIdArg,
    api_url: ApiUrl = "",
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """Re-queue a FAILED run; its attempts start again."""
    _show_one(_client(api_url, api_key, profile, region).post(f"/v1/runs/{run_id}/retry"), output)


# ---------------------------------------------------------------- dlq


@dlq_app.command("list")
@handles_errors
def dlq_list(
    api_url: ApiUrl = "",
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """Your FAILED runs, newest first."""
    client = _client(api_url, api_key, profile, region)
    _show_page(_listing(client, "/v1/dlq", all_pages, limit=limit, cursor=cursor), output, render.RUN_COLUMNS)


@dlq_app.command("redrive")
@handles_errors
def dlq_redrive(
    run_ids: Annotated[list[str] | None, typer.Argument(help="Runs to re-queue (default: all FAILED runs).")] = None,
    api_url: ApiUrl = "",
    output: OutputOpt = None,
    api_key: ApiKey = None,
    profile: Profile = None,
    region: Region = None,
) -> None:
    """Re-queue all your FAILED runs, or the ones named."""
    client = _client(api_url, api_key, profile, region)
    result = client.post("/v1/dlq/redrive", {"run_ids": run_ids} if run_ids else None)
    if _mode(output) is Output.json:
        typer.echo(render.as_json(result))
        return
    typer.echo(f"redriven: {result['redriven']}")
    if result.get("not_redriven"):
        typer.echo(f"not redriven (unknown or not FAILED): {', '.join(result['not_redriven'])}")
    if result.get("more"):
        typer.echo("more FAILED runs remain: run it again", err=True)
