"""The `tickwork` command line: jobs, runs, the DLQ and workflows over the HTTP API; `tickwork dev` runs it all
locally.

    tickwork jobs create --name hello --type echo --at +10s --payload '{"hello": "world"}'
    tickwork runs list <job id> --wait
    tickwork runs result <run id>
    tickwork workflows create --file workflow.json
    tickwork workflows trigger <workflow id>
    tickwork workflows runs <workflow id> --wait
    tickwork tenants get me
    tickwork tenants set acme --weight 3 --max-active-jobs 100
    tickwork smoke --api-url <ApiUrl>

The API comes from --api-url or TICKWORK_API_URL. A deployed API is called with SigV4 from the normal AWS
credential chain; a local one (127.0.0.1) needs nothing, or --api-key when it was started with a keys file.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer
from tickwork_console.proxy import ConsoleServer

from tickwork_cli import render
from tickwork_cli.client import ApiError, Client, ConfigError
from tickwork_cli.options import (
    AllPages,
    CursorOpt,
    JobFields,
    JobIdArg,
    Limit,
    RunIdArg,
    RunsListing,
    Session,
    WorkflowIdArg,
    WorkflowRunIdArg,
    api_command,
)
from tickwork_cli.smoke import Smoke, SmokeFailed, SmokeJob, SmokeTimedOut

app = typer.Typer(help="Tickwork: a serverless job scheduler.", no_args_is_help=True)
jobs_app = typer.Typer(help="Create, list, change and run jobs.", no_args_is_help=True)
runs_app = typer.Typer(help="Runs of jobs: list, inspect, fetch results, retry.", no_args_is_help=True)
dlq_app = typer.Typer(help="FAILED runs: list and re-queue them.", no_args_is_help=True)
workflows_app = typer.Typer(
    help="Workflows (a schedule and a DAG of steps): create, list, trigger, and their runs.", no_args_is_help=True
)
app.add_typer(jobs_app, name="jobs")
app.add_typer(runs_app, name="runs")
app.add_typer(dlq_app, name="dlq")
app.add_typer(workflows_app, name="workflows")
schedules_app = typer.Typer(help="Schedules before they are jobs': preview their occurrences.", no_args_is_help=True)
app.add_typer(schedules_app, name="schedules")
tenants_app = typer.Typer(
    help="Tenants' settings (fair-share weight and quotas) and usage; setting them is an admin's.", no_args_is_help=True
)
app.add_typer(tenants_app, name="tenants")

# `tickwork dev` lives with the local runtime (tickwork_local.cli), which registers itself here.
try:
    from tickwork_local.cli import register as _register_dev
except ImportError:  # pragma: no cover - the local runtime is not installed
    pass
else:
    _register_dev(app)

EXIT_TIMEOUT = 3  # `runs list --wait` gave up; API errors exit 1, usage errors 2 (options.api_command)
EXIT_SMOKE_FAILED = 1
TERMINAL = {"SUCCEEDED", "FAILED", "SKIPPED"}
WORKFLOW_RUN_TERMINAL = TERMINAL | {"CANCELLED"}
# Tests replace these to wait without sleeping, and to share the API's (fake) clock.
sleep: Callable[[float], None] = time.sleep


def now() -> datetime:
    return datetime.now(UTC)


def _listing(client: Client, path: str, all_pages: bool, **query: Any) -> dict[str, Any]:
    if all_pages:
        return {"items": list(client.pages(path, **query)), "next_cursor": None}
    page: dict[str, Any] = client.get(path, **query)
    return page


def _call_by_id(group: typer.Typer, name: str, doc: str, method: str, path: str, id_arg: Any) -> None:
    """A command that makes one call about one thing named by its id and shows the answer. The id stands in
    `path` as `{job_id}` (or `{run_id}`, ...), which names the command's argument too (its metavar in --help)."""
    id_name = path[path.index("{") + 1 : path.index("}")]

    def command(session: Session, **ids: str) -> None:
        session.show_one(session.client.request(method, path.format(**ids)))

    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(id_name, inspect.Parameter.KEYWORD_ONLY, annotation=id_arg),
            inspect.Parameter("session", inspect.Parameter.KEYWORD_ONLY, annotation=Session),
        ]
    )
    command.__doc__ = doc
    group.command(name)(api_command(command))


def _watch(
    session: Session, path: str, status: str | None, listing: RunsListing, columns: Any, terminal: set[str]
) -> None:
    """Show a page of runs; with --wait, first poll until it lists runs and all of them are terminal."""

    def fetch() -> dict[str, Any]:
        query = {"status": status, "limit": listing.limit, "cursor": listing.cursor}
        return _listing(session.client, path, listing.all_pages, **query)

    page = fetch()
    deadline = time.monotonic() + listing.wait_timeout
    waited = 0.0
    said = ""
    while listing.wait and not (page["items"] and all(r["status"] in terminal for r in page["items"])):
        if time.monotonic() >= deadline or waited >= listing.wait_timeout:
            session.show_page(page, columns)
            typer.echo(f"tickwork: runs still unfinished after {listing.wait_timeout:g} s", err=True)
            raise typer.Exit(EXIT_TIMEOUT)
        pending = sorted({r["status"] for r in page["items"] if r["status"] not in terminal}) or ["no runs yet"]
        news = f"waiting: {', '.join(pending)}"
        if news != said:  # say it once, and again when it changes
            typer.echo(news, err=True)
            said = news
        sleep(listing.interval)
        waited += listing.interval
        page = fetch()
    session.show_page(page, columns)


# ---------------------------------------------------------------- building requests

_RELATIVE = re.compile(r"^([+-])\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_at(value: str, current: datetime | None = None) -> str:
    """An absolute ISO-8601 time as given, or `+10s` / `+5m` / `+2h` / `+1d` from now, or `-1d` before it (a
    backfill's range), in UTC with milliseconds."""
    match = _RELATIVE.match(value.strip())
    if not match:
        return value
    sign = -1 if match.group(1) == "-" else 1
    seconds = sign * float(match.group(2)) * _UNITS[match.group(3)]
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
    """What create and update send only when given: priority, the retry policy, overlap, catch-up, the circuit breaker,
    limits, tags."""
    retry = _optional_fields(
        max_attempts=fields.max_attempts, backoff_seconds=fields.backoff, max_backoff_seconds=fields.max_backoff
    )
    return _optional_fields(
        priority=fields.priority,
        retry=retry or None,
        timeout_seconds=fields.timeout,
        misfire_grace_seconds=fields.misfire_grace,
        overlap=fields.overlap,
        catchup=fields.catchup,
        # Only what was given: the API names a missing threshold or cooldown (422).
        circuit_breaker=_optional_fields(
            failure_threshold=fields.failure_threshold,
            cooldown_seconds=fields.cooldown_seconds,
            max_cooldown_seconds=fields.max_cooldown_seconds,
        )
        or None,
        jitter_seconds=fields.jitter_seconds,
        start_precision=fields.start_precision,
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
    tag: Annotated[str | None, typer.Option("--tag", help="Only jobs tagged so: key=value.")] = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your jobs, newest first."""
    query = {
        "state": state,
        "type": job_type,
        "name_prefix": name_prefix,
        "tag": tag,
        "limit": limit,
        "cursor": cursor,
    }
    session.show_page(_listing(session.client, "/v1/jobs", all_pages, **query), render.JOB_COLUMNS)


_call_by_id(jobs_app, "get", "One job.", "GET", "/v1/jobs/{job_id}", JobIdArg)


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


_call_by_id(jobs_app, "pause", "Pause a job (idempotent).", "POST", "/v1/jobs/{job_id}/pause", JobIdArg)
_call_by_id(
    jobs_app,
    "resume",
    "Resume a paused job (idempotent); missed occurrences follow the misfire rule.",
    "POST",
    "/v1/jobs/{job_id}/resume",
    JobIdArg,
)
_call_by_id(jobs_app, "cancel", "Cancel a job (idempotent).", "DELETE", "/v1/jobs/{job_id}", JobIdArg)
_call_by_id(
    jobs_app, "trigger", "Run a job now, once, outside its schedule.", "POST", "/v1/jobs/{job_id}/trigger", JobIdArg
)


# ---------------------------------------------------------------- preview and backfill

PreviewCount = Annotated[int | None, typer.Option("--count", help="How many occurrences (1-1000; default 5).")]


@jobs_app.command("preview")
@api_command
def jobs_preview(job_id: JobIdArg, session: Session, count: PreviewCount = None) -> None:
    """A job's next occurrences, as it will run them, with DST flags (gap, fold)."""
    page = session.client.get(f"/v1/jobs/{quote(job_id, safe='')}/preview", count=count)
    session.show_page({**page, "next_cursor": None}, render.PREVIEW_COLUMNS)


@schedules_app.command("preview")
@api_command
def schedules_preview(
    session: Session,
    at: Annotated[str | None, typer.Option("--at", help="Once at this ISO-8601 time, or +10s / +5m from now.")] = None,
    cron: Annotated[str | None, typer.Option("--cron", help="Cron: 5 fields, or 6 with seconds first.")] = None,
    rate: Annotated[str | None, typer.Option("--rate", help='Fixed interval, e.g. "5 minutes".')] = None,
    timezone: Annotated[str | None, typer.Option("--timezone", "--tz", help="IANA time zone (default UTC).")] = None,
    count: PreviewCount = None,
    since: Annotated[
        str | None, typer.Option("--from", help="Occurrences after this ISO-8601 time, or +1d (default now).")
    ] = None,
) -> None:
    """A schedule's next occurrences, with DST flags (gap, fold), before it is a job's."""
    schedule = _optional_fields(at=parse_at(at) if at else None, cron=cron, rate=rate, timezone=timezone)
    body = {"schedule": schedule, **_optional_fields(count=count, **{"from": parse_at(since) if since else None})}
    page = session.client.post("/v1/schedules/preview", body)
    session.show_page({**page, "next_cursor": None}, render.PREVIEW_COLUMNS)


@jobs_app.command("backfill")
@api_command
def jobs_backfill(
    job_id: JobIdArg,
    session: Session,
    since: Annotated[str, typer.Option("--from", help="The first past occurrence to run (ISO-8601, or -1d).")],
    until: Annotated[str, typer.Option("--to", help="The last (ISO-8601, or -1h); at most 31 days after --from.")],
    max_runs: Annotated[int | None, typer.Option("--max-runs", help="At most this many runs (1-1000; 100).")] = None,
) -> None:
    """Run a job's past occurrences in [--from, --to], each once: a repeat creates none it already made."""
    body = {"from": parse_at(since), "to": parse_at(until), **_optional_fields(max_runs=max_runs)}
    session.show_one(session.client.post(f"/v1/jobs/{quote(job_id, safe='')}/backfill", body))


# ---------------------------------------------------------------- runs


@runs_app.command("list")
@api_command
def runs_list(
    job_id: JobIdArg,
    session: Session,
    status: Annotated[str | None, typer.Option("--status", help="Only runs with this status.")] = None,
    *,
    listing: RunsListing,
) -> None:
    """Runs of a job, newest first."""
    _watch(session, f"/v1/jobs/{job_id}/runs", status, listing, render.RUN_COLUMNS, TERMINAL)


_call_by_id(runs_app, "get", "One run.", "GET", "/v1/runs/{run_id}", RunIdArg)


@runs_app.command("result")
@api_command
def runs_result(run_id: RunIdArg, session: Session) -> None:
    """The run's result document (JSON), as stored; JSON whatever --output says."""
    typer.echo(render.as_json(session.client.get(f"/v1/runs/{run_id}/result")))


@runs_app.command("logs")
@api_command
def runs_logs(run_id: RunIdArg, session: Session) -> None:
    """The lines the run's handler logged (ctx.log), every attempt's, in order."""
    logs = session.client.get(f"/v1/runs/{run_id}/logs")
    if session.as_json:
        typer.echo(render.as_json(logs))
        return
    typer.echo(render.items_table(logs["lines"], render.LOG_COLUMNS))
    if logs.get("truncated"):
        typer.echo(f"(truncated at {logs['limit_bytes']} bytes)", err=True)
    if logs.get("insights_url"):
        typer.echo(f"Logs Insights: {logs['insights_url']}", err=True)


_call_by_id(
    runs_app, "retry", "Re-queue a FAILED run; its attempts start again.", "POST", "/v1/runs/{run_id}/retry", RunIdArg
)


# ---------------------------------------------------------------- dlq


def on_a_terminal() -> bool:
    """Someone is there to ask: stdin and stderr (where the question goes) are a terminal."""
    return sys.stdin.isatty() and sys.stderr.isatty()


@dlq_app.command("list")
@api_command
def dlq_list(session: Session, limit: Limit = None, cursor: CursorOpt = None, all_pages: AllPages = False) -> None:
    """Your FAILED runs, newest first."""
    session.show_page(_listing(session.client, "/v1/dlq", all_pages, limit=limit, cursor=cursor), render.RUN_COLUMNS)


@dlq_app.command("redrive")
@api_command
def dlq_redrive(
    session: Session,
    run_ids: Annotated[list[str] | None, typer.Argument(help="Runs to re-queue.")] = None,
    all_runs: Annotated[
        bool, typer.Option("--all", help="Re-queue every FAILED run (250 a call). Asked for on a terminal.")
    ] = False,
) -> None:
    """Re-queue the FAILED runs named, or all your FAILED runs (--all)."""
    if run_ids and all_runs:
        raise typer.BadParameter("name runs, or pass --all; not both", param_hint="'--all'")
    if not run_ids and not all_runs:
        if not on_a_terminal():
            raise typer.BadParameter(
                "name the runs to re-queue, or pass --all for every FAILED run", param_hint="'--all'"
            )
        typer.confirm("Re-queue every FAILED run?", abort=True, err=True)
    result = session.client.post("/v1/dlq/redrive", {"run_ids": run_ids} if run_ids else {"all": True})
    if session.as_json:
        typer.echo(render.as_json(result))
        return
    typer.echo(f"redriven: {result['redriven']}")
    if result.get("not_redriven"):
        typer.echo(f"not redriven (unknown or not FAILED): {', '.join(result['not_redriven'])}")
    if result.get("more"):
        typer.echo("more FAILED runs remain: run it again", err=True)


# ---------------------------------------------------------------- workflows


def _workflow_file(path: Path) -> dict[str, Any]:
    """A workflow's definition, as POST /v1/workflows takes it, from a JSON file (or - for stdin)."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        raise ConfigError(f"--file: cannot read {path}: {exc.strerror}") from None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"--file: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError("--file: must hold a JSON object (name, schedule, steps, ...)")
    return value


@workflows_app.command("create")
@api_command
def workflows_create(
    file: Annotated[
        Path, typer.Option("--file", "-f", help="The workflow as JSON (name, schedule, steps, ...), or - for stdin.")
    ],
    session: Session,
) -> None:
    """Create a workflow from its definition (see docs/workflows.md)."""
    session.show_one(session.client.post("/v1/workflows", _workflow_file(file)))


@workflows_app.command("list")
@api_command
def workflows_list(
    session: Session,
    state: Annotated[str | None, typer.Option("--state", help="ACTIVE, PAUSED, CANCELLED or COMPLETED.")] = None,
    name_prefix: Annotated[str | None, typer.Option("--name-prefix", help="Only names starting so.")] = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your workflows, newest first."""
    query = {"state": state, "name_prefix": name_prefix, "limit": limit, "cursor": cursor}
    session.show_page(_listing(session.client, "/v1/workflows", all_pages, **query), render.WORKFLOW_COLUMNS)


_call_by_id(workflows_app, "get", "One workflow.", "GET", "/v1/workflows/{workflow_id}", WorkflowIdArg)
_call_by_id(
    workflows_app,
    "pause",
    "Pause a workflow: its occurrences are skipped; runs in progress go on.",
    "POST",
    "/v1/workflows/{workflow_id}/pause",
    WorkflowIdArg,
)
_call_by_id(
    workflows_app,
    "resume",
    "Resume a paused workflow; missed occurrences follow the misfire rule.",
    "POST",
    "/v1/workflows/{workflow_id}/resume",
    WorkflowIdArg,
)
_call_by_id(
    workflows_app,
    "cancel",
    "Cancel a workflow: it has no new workflow runs.",
    "DELETE",
    "/v1/workflows/{workflow_id}",
    WorkflowIdArg,
)
_call_by_id(
    workflows_app,
    "trigger",
    "Run a workflow now, once, outside its schedule: its root steps are queued.",
    "POST",
    "/v1/workflows/{workflow_id}/trigger",
    WorkflowIdArg,
)


@workflows_app.command("runs")
@api_command
def workflows_runs(
    workflow_id: WorkflowIdArg,
    session: Session,
    status: Annotated[
        str | None, typer.Option("--status", help="RUNNING, SUCCEEDED, FAILED, SKIPPED or CANCELLED.")
    ] = None,
    *,
    listing: RunsListing,
) -> None:
    """Runs of a workflow, newest first, with each step's state."""
    path = f"/v1/workflows/{workflow_id}/runs"
    _watch(session, path, status, listing, render.WORKFLOW_RUN_COLUMNS, WORKFLOW_RUN_TERMINAL)


_call_by_id(
    workflows_app,
    "show-run",
    "One workflow run, with every step's state and run id (`tickwork runs get` shows a step's run).",
    "GET",
    "/v1/workflow-runs/{workflow_run_id}",
    WorkflowRunIdArg,
)
_call_by_id(
    workflows_app,
    "cancel-run",
    "Cancel a RUNNING workflow run: steps not started are skipped, running ones asked to stop.",
    "POST",
    "/v1/workflow-runs/{workflow_run_id}/cancel",
    WorkflowRunIdArg,
)
_call_by_id(
    workflows_app,
    "retry-run",
    "Re-run a FAILED workflow run's failed steps and what they skipped; nothing that succeeded runs again.",
    "POST",
    "/v1/workflow-runs/{workflow_run_id}/retry",
    WorkflowRunIdArg,
)


# ---------------------------------------------------------------- tenants


def _quota_option(flag: str, what: str) -> Any:
    return typer.Option(flag, min=1, max=1_000_000, show_default=False, help=f"{what} at most (1-1000000).")


def _tenant_path(tenant: str) -> str:
    """A tenant's path; a name from an IAM identity holds `/` and `:`, sent percent-encoded."""
    return f"/v1/tenants/{quote(tenant, safe='')}"


def _show_tenant(session: Session, view: dict[str, Any]) -> None:
    """The API's answer as JSON; as a table, one row per setting and usage figure."""
    if session.as_json:
        session.show_one(view)
        return
    usage = {f"usage.{name}": value for name, value in view["usage"].items()}
    session.show_one({"tenant": view["tenant"], **view["settings"], **usage})


@tenants_app.command("get")
@api_command
def tenants_get(
    session: Session,
    tenant: Annotated[
        str, typer.Argument(help="A tenant's name (an admin may read any), or `me` for your own.", show_default=True)
    ] = "me",
) -> None:
    """A tenant's settings (the defaults where none are set) and current usage."""
    _show_tenant(session, session.client.get(_tenant_path(tenant)))


@tenants_app.command("set")
@api_command
def tenants_set(
    tenant: Annotated[str, typer.Argument(help="The tenant's name (`me` is not one: name the tenant).")],
    session: Session,
    weight: Annotated[
        int | None, typer.Option("--weight", min=1, max=100, show_default=False, help="Fair-share weight, 1-100.")
    ] = None,
    max_active_jobs: Annotated[
        int | None, _quota_option("--max-active-jobs", "ACTIVE and PAUSED jobs and workflows")
    ] = None,
    max_runs_per_minute: Annotated[
        int | None, _quota_option("--max-runs-per-minute", "Runs dispatched a minute")
    ] = None,
    max_concurrent_runs: Annotated[int | None, _quota_option("--max-concurrent-runs", "Runs executing at once")] = None,
) -> None:
    """Set a tenant's weight and quotas (an admin's command).

    This replaces the tenant's whole settings: an option you leave out is not kept, it is unset.

    An unset weight is 1; an unset quota is no limit. So `--weight 2` alone also clears the quotas.

    Give every setting you want to keep. Functions see the change within 30 s.
    """
    chosen = {
        "weight": weight,
        "max_active_jobs": max_active_jobs,
        "max_runs_per_minute": max_runs_per_minute,
        "max_concurrent_runs": max_concurrent_runs,
    }
    stored = session.client.put(_tenant_path(tenant), {k: v for k, v in chosen.items() if v is not None})
    if session.as_json:
        session.show_one(stored)
    else:
        session.show_one({"tenant": tenant, **stored})


@app.command("smoke")
@api_command
def smoke(
    session: Session,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Fail if the run has not finished this many seconds after the create.")
    ] = 120,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls of the run.")] = 1,
) -> None:
    """Check a stack end to end: an echo one-shot due in 10 s runs once and its result is its payload.

    The job (named tickwork-smoke-<token>, tagged tickwork-smoke) is cancelled afterwards, whatever happened.
    Exit status 0 when every step passed; 1 when one failed (the reason is printed), 3 on --timeout.
    """
    started = time.monotonic()
    check = Smoke(session.client, timeout, interval, now, sleep, lambda line: typer.echo(f"smoke: {line}"))
    try:
        check.run(SmokeJob.new(), parse_at)
    except SmokeTimedOut as exc:
        typer.echo(f"FAIL: {exc}", err=True)
        raise typer.Exit(EXIT_TIMEOUT) from None
    except SmokeFailed as exc:
        typer.echo(f"FAIL: {exc}", err=True)
        raise typer.Exit(EXIT_SMOKE_FAILED) from None
    except ApiError as exc:
        typer.echo(f"FAIL: the API refused a call:\n{exc.describe()}", err=True)
        raise typer.Exit(EXIT_SMOKE_FAILED) from None
    typer.echo(f"PASS: {session.client.base_url} ran a job end to end in {time.monotonic() - started:.1f} s")


@app.command("console")
def console(
    api_url: Annotated[
        str,
        typer.Option("--api-url", envvar="TICKWORK_API_URL", help="The deployed API's base URL.", show_default=False),
    ],
    profile: Annotated[
        str | None, typer.Option("--profile", envvar="AWS_PROFILE", help="AWS profile to sign with.")
    ] = None,
    region: Annotated[str | None, typer.Option("--region", help="Region to sign for (default: from the URL).")] = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Local port (0: any free one).")] = 8790,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="TICKWORK_API_KEY",
            help="X-Api-Key, for a local runtime started with --api-keys (then nothing is signed).",
        ),
    ] = None,
    accept_host: Annotated[
        list[str] | None,
        typer.Option(
            "--accept-host",
            metavar="NAME",
            help="Answer for this host name too (besides localhost, 127.0.0.1 and [::1]); repeatable.",
        ),
    ] = None,
) -> None:
    """Open the web console for a deployed API: served on 127.0.0.1, each API call signed (SigV4) here.

    Like `kubectl proxy`: your AWS credentials (from --profile or the usual chain) sign the calls this process
    forwards; the browser never sees them. For `tickwork dev`, open http://127.0.0.1:3000/console/ instead.
    """
    try:
        # A deployed API takes IAM, so every call is signed; a local runtime started with --api-keys takes
        # the key instead (IAM cannot be played locally).
        client = Client(api_url, api_key=api_key, profile=profile, region=region, always_sign=api_key is None)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        server = ConsoleServer(client, port, accept_hosts=tuple(accept_host or ()))
    except OSError as exc:
        typer.echo(f"error: cannot listen on 127.0.0.1:{port}: {exc.strerror}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"Tickwork console for {client.base_url}: {server.url} (Ctrl-C to stop)")
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
