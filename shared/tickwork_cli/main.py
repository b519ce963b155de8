"""The `tickwork` command line: jobs, runs and the DLQ over the HTTP API; `tickwork dev` runs it all locally.

    tickwork jobs create --name hello --type echo --at +10s --payload '{"hello": "world"}'
    tickwork runs list <job id> --wait
    tickwork runs result <run id>

The API comes from --api-url or TICKWORK_API_URL. A deployed API is called with SigV4 from the normal AWS
credential chain; a local one (127.0.0.1) needs nothing, or --api-key when it was started with a keys file.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from tickwork_cli import render
from tickwork_cli.client import Client, ConfigError
from tickwork_cli.options import (
    AllPages,
    CursorOpt,
    JobFields,
    JobIdArg,
    Limit,
    RunIdArg,
    Session,
    api_command,
)

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

EXIT_TIMEOUT = 3  # `runs list --wait` gave up; API errors exit 1, usage errors 2 (options.api_command)
TERMINAL = {"SUCCEEDED", "FAILED", "SKIPPED"}
# Tests replace these to wait without sleeping, and to share the API's (fake) clock.
sleep: Callable[[float], None] = time.sleep


def now() -> datetime:
    return datetime.now(UTC)


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


def _payload(fields: JobFields) -> dict[str, Any] | None:
    payload, payload_file = fields.payload, fields.payload_file
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


def _schedule(fields: JobFields) -> dict[str, Any]:
    """The schedule fields given; times relative to now (`+10s`) made absolute."""
    given = {"at": fields.at, "cron": fields.cron, "rate": fields.rate, "timezone": fields.tz}
    given |= {"start_at": fields.start_at, "end_at": fields.end_at}
    times = {"at", "start_at", "end_at"}
    return {key: parse_at(value) if key in times else value for key, value in given.items() if value is not None}


def _optional_fields(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _settings(fields: JobFields) -> dict[str, Any]:
    """What create and update send only when given: priority, the retry policy, limits, tags."""
    retry = _optional_fields(
        max_attempts=fields.max_attempts, backoff_seconds=fields.backoff, max_backoff_seconds=fields.max_backoff
    )
    return _optional_fields(
        priority=fields.priority,
        retry=retry or None,
        timeout_seconds=fields.timeout,
        misfire_grace_seconds=fields.misfire_grace,
        tags=_tags(fields.tag),
    )


# ---------------------------------------------------------------- jobs


@jobs_app.command("create")
@api_command
def jobs_create(
    name: Annotated[str, typer.Option("--name", help="A name for people.")],
    job_type: Annotated[str, typer.Option("--type", help="echo, http, lambda, or a registered type.")],
    session: Session,
    fields: JobFields,
    idempotency_key: Annotated[
        str | None, typer.Option("--idempotency-key", help="Retrying with the same key never creates twice.")
    ] = None,
) -> None:
    """Create a job."""
    spec: dict[str, Any] = {
        "name": name,
        "type": job_type,
        "payload": _payload(fields) or {},
        "schedule": _schedule(fields),
        **_settings(fields),
    }
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
    session.show_one(session.client.post("/v1/jobs", spec, headers=headers))


@jobs_app.command("list")
@api_command
def jobs_list(
    session: Session,
    state: Annotated[str | None, typer.Option("--state", help="ACTIVE, PAUSED, CANCELLED or COMPLETED.")] = None,
    job_type: Annotated[str | None, typer.Option("--type", help="Only jobs of this type.")] = None,
    name_prefix: Annotated[str | None, typer.Option("--name-prefix", help="Only names starting so.")] = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your jobs, newest first."""
    query = {"state": state, "type": job_type, "name_prefix": name_prefix, "limit": limit, "cursor": cursor}
    session.show_page(_listing(session.client, "/v1/jobs", all_pages, **query), render.JOB_COLUMNS)


def _job_call(name: str, doc: str, method: str, action: str = "") -> None:
    """A `jobs` command that makes one call about one job and shows the answer."""

    def command(job_id: JobIdArg, session: Session) -> None:
        session.show_one(session.client.request(method, f"/v1/jobs/{job_id}{action}"))

    command.__doc__ = doc
    jobs_app.command(name)(api_command(command))


def _run_call(name: str, doc: str, method: str, action: str = "") -> None:
    """A `runs` command that makes one call about one run and shows the answer."""

    def command(run_id: RunIdArg, session: Session) -> None:
        session.show_one(session.client.request(method, f"/v1/runs/{run_id}{action}"))

    command.__doc__ = doc
    runs_app.command(name)(api_command(command))


_job_call("get", "One job.", "GET")


@jobs_app.command("update")
@api_command
def jobs_update(
    job_id: JobIdArg,
    session: Session,
    name: Annotated[str | None, typer.Option("--name", help="A new name.")] = None,
    *,
    fields: JobFields,
) -> None:
    """Change a job; a new schedule recomputes its next occurrence."""
    client = session.client
    change: dict[str, Any] = {**_optional_fields(name=name, payload=_payload(fields)), **_settings(fields)}
    schedule = _schedule(fields)
    if schedule:
        if not {"at", "cron", "rate"} & set(schedule):
            # Only the zone or the window changes: keep the kind the job has.
            current = client.get(f"/v1/jobs/{job_id}")["schedule"]
            schedule = {**{k: v for k, v in current.items() if v is not None}, **schedule}
        change["schedule"] = schedule
    if not change:
        raise ConfigError("nothing to change: give at least one option (see --help)")
    session.show_one(client.patch(f"/v1/jobs/{job_id}", change))


_job_call("pause", "Pause a job (idempotent).", "POST", "/pause")
_job_call("resume", "Resume a paused job (idempotent); missed occurrences follow the misfire rule.", "POST", "/resume")
_job_call("cancel", "Cancel a job (idempotent).", "DELETE")
_job_call("trigger", "Run a job now, once, outside its schedule.", "POST", "/trigger")


# ---------------------------------------------------------------- runs


@runs_app.command("list")
@api_command
def runs_list(
    job_id: JobIdArg,
    session: Session,
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
) -> None:
    """Runs of a job, newest first."""
    client = session.client
    path = f"/v1/jobs/{job_id}/runs"
    page = _listing(client, path, all_pages, status=status, limit=limit, cursor=cursor)
    deadline = time.monotonic() + wait_timeout
    waited = 0.0
    said = ""
    while wait and not (page["items"] and all(r["status"] in TERMINAL for r in page["items"])):
        if time.monotonic() >= deadline or waited >= wait_timeout:
            session.show_page(page, render.RUN_COLUMNS)
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
    session.show_page(page, render.RUN_COLUMNS)


_run_call("get", "One run.", "GET")


@runs_app.command("result")
@api_command
def runs_result(run_id: RunIdArg, session: Session) -> None:
    """The run's result document (JSON), as stored; JSON whatever --output says."""
    typer.echo(render.as_json(session.client.get(f"/v1/runs/{run_id}/result")))


_run_call("retry", "Re-queue a FAILED run; its attempts start again.", "POST", "/retry")


# ---------------------------------------------------------------- dlq


@dlq_app.command("list")
@api_command
def dlq_list(session: Session, limit: Limit = None, cursor: CursorOpt = None, all_pages: AllPages = False) -> None:
    """Your FAILED runs, newest first."""
    session.show_page(_listing(session.client, "/v1/dlq", all_pages, limit=limit, cursor=cursor), render.RUN_COLUMNS)


@dlq_app.command("redrive")
@api_command
def dlq_redrive(
    session: Session,
    run_ids: Annotated[list[str] | None, typer.Argument(help="Runs to re-queue (default: all FAILED runs).")] = None,
) -> None:
    """Re-queue all your FAILED runs, or the ones named."""
    result = session.client.post("/v1/dlq/redrive", {"run_ids": run_ids} if run_ids else None)
    if session.as_json:
        typer.echo(render.as_json(result))
        return
    typer.echo(f"redriven: {result['redriven']}")
    if result.get("not_redriven"):
        typer.echo(f"not redriven (unknown or not FAILED): {', '.join(result['not_redriven'])}")
    if result.get("more"):
        typer.echo("more FAILED runs remain: run it again", err=True)
