"""The `tickwork` command line: jobs, runs, the DLQ and workflows over the HTTP API; `tickwork dev` runs it all
locally.

    tickwork jobs create --name hello --type echo --at +10s --payload '{"hello": "world"}'
    tickwork runs list <job id> --wait
    tickwork runs result <run id>
    tickwork workflows create --file workflow.json
    tickwork workflows trigger <workflow id>
    tickwork workflow-runs list <workflow id> --wait
    tickwork tenants get me
    tickwork tenants set acme --weight 3 --max-active-jobs 100
    tickwork audit --resource <job id> --from -1d
    tickwork smoke --api-url <ApiUrl>

The API comes from --api-url or TICKWORK_API_URL. A deployed API is called with SigV4 from the normal AWS
credential chain; a local one (127.0.0.1) needs nothing, or --api-key when it was started with a keys file.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer
from tickwork_console.proxy import ConsoleServer

from tickwork_cli import render
from tickwork_cli.bodies import (
    SCHEDULE_KINDS,
    debounce_of,
    given,
    job_settings_of,
    json_object,
    json_object_file,
    overlay,
    parse_instant,
    payload_given,
    payload_of,
    policy_of,
    refuse_a_zone_for_a_rate,
    schedule_of,
    tags_of,
)
from tickwork_cli.client import ApiError, Client, ConfigError
from tickwork_cli.jobs_as_code import register as register_jobs_as_code
from tickwork_cli.operations import register as register_operations
from tickwork_cli.options import (
    DEBOUNCE_COLLECT_OPTION,
    DEBOUNCE_OPTION,
    EVERY_TENANT,
    EXIT_STATUS_HELP,
    EXIT_TIMEOUT,
    AllPages,
    CursorOpt,
    JobFields,
    JobIdArg,
    Limit,
    PolicyFields,
    RunIdArg,
    RunsListing,
    ScheduleFields,
    Session,
    TenantOpt,
    WorkflowIdArg,
    WorkflowRunIdArg,
    api_command,
    exit_status_of,
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
dead_letters_app = typer.Typer(
    help="The band queues' SQS dead-letter queues (messages the executor could not process; not FAILED runs, which "
    "are `dlq`'s): read and redrive them, an admin's commands.",
    no_args_is_help=True,
)
app.add_typer(dead_letters_app, name="dead-letters")
app.add_typer(workflows_app, name="workflows")
workflow_runs_app = typer.Typer(
    help="Runs of workflows: list, inspect, cancel, retry (a step's run is a run: `tickwork runs`).",
    no_args_is_help=True,
)
app.add_typer(workflow_runs_app, name="workflow-runs")
schedules_app = typer.Typer(help="Schedules before they are jobs': preview their occurrences.", no_args_is_help=True)
app.add_typer(schedules_app, name="schedules")
tenants_app = typer.Typer(
    help="Tenants' settings (fair-share weight and quotas) and usage; setting them is an admin's.", no_args_is_help=True
)
app.add_typer(tenants_app, name="tenants")
# calendars, freeze, unfreeze; `now` read when called, as tests replace it (and it is defined below)
register_operations(app, lambda: now())  # noqa: PLW0108
register_jobs_as_code(app)  # plan, apply

# `tickwork dev` lives with the local runtime (tickwork_local.cli), which registers itself here.
try:
    from tickwork_local.cli import register as _register_dev
except ImportError:  # pragma: no cover - the local runtime is not installed
    pass
else:
    _register_dev(app)

EXIT_SMOKE_FAILED = 1
EXIT_NOT_REDRIVEN = 1  # `dlq redrive` left a run it was asked to re-queue
EXIT_BULK_INCOMPLETE = 1  # a bulk action (`jobs pause --tag`, `runs retry --job`) found one it could not change
TERMINAL = {"SUCCEEDED", "FAILED", "SKIPPED"}
WORKFLOW_RUN_TERMINAL = TERMINAL | {"CANCELLED", "COMPENSATED", "COMPENSATION_FAILED"}
# Tests replace these to wait without sleeping, and to share the API's (fake) clock.
sleep: Callable[[float], None] = time.sleep


def now() -> datetime:
    return datetime.now(UTC)


def _listing(client: Client, path: str, all_pages: bool, **query: Any) -> dict[str, Any]:
    if all_pages:
        return {"items": list(client.pages(path, **query)), "next_cursor": None}
    page: dict[str, Any] = client.get(path, **query)
    return page


def _call_by_id(
    group: typer.Typer, name: str, doc: str, method: str, path: str, id_arg: Any, *, hidden: bool = False
) -> None:
    """A command that makes one call about one thing named by its id and shows the answer. The id stands in
    `path` as `{job_id}` (or `{run_id}`, ...), which names the command's argument too (its metavar in --help)."""
    id_name = path[path.index("{") + 1 : path.index("}")]

    def command(session: Session, tenant: str | None = None, **ids: str) -> None:
        session.show_one(session.client.request(method, path.format(**ids), query=given(tenant=tenant)))

    parameters = [
        inspect.Parameter(id_name, inspect.Parameter.KEYWORD_ONLY, annotation=id_arg),
        inspect.Parameter("session", inspect.Parameter.KEYWORD_ONLY, annotation=Session),
    ]
    if method == "GET":  # a read: an admin's, of a named tenant's (the item must be its), or any tenant's
        parameters.append(
            inspect.Parameter("tenant", inspect.Parameter.KEYWORD_ONLY, annotation=TenantOpt, default=None)
        )
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__doc__ = doc
    group.command(name, hidden=hidden)(api_command(command))


def _watch(
    session: Session,
    path: str,
    status: str | None,
    listing: RunsListing,
    columns: Any,
    terminal: set[str],
    *,
    started: bool = False,
) -> None:
    """Show a page of runs (`started`: only those that started); with --wait, first poll until it lists runs and
    all of them are terminal, and exit with how they ended (options.EXIT_BY_ENDING)."""

    def fetch() -> dict[str, Any]:
        query = {
            "status": status,
            "limit": listing.limit,
            "cursor": listing.cursor,
            "started": "true" if started else None,
        }
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
    if listing.wait:
        raise typer.Exit(exit_status_of(r["status"] for r in page["items"]))


# ---------------------------------------------------------------- building requests


def parse_at(value: str, current: datetime | None = None, option: str = "--at") -> str:
    """An instant from the command line (`now`, `+10s`, `-1h`, `+1h30m`, or ISO-8601): the one parser every
    option taking an instant uses."""
    return parse_instant(value, option, current or now())


def _body(file: Path | None, what: str, flags: dict[str, Any]) -> dict[str, Any]:
    """The request body: the file's fields (if --file), the flags' laid over them."""
    return overlay(json_object_file(file, what) if file is not None else {}, flags)


def _whole_schedule(client: Client, path: str, flags: ScheduleFields, body: dict[str, Any]) -> dict[str, Any]:
    """An update's body with a whole schedule: when only the zone or the window changes, the kind (and the
    rest) comes from what the job or workflow has, since the API takes a schedule whole."""
    schedule = body.get("schedule")
    if schedule and not SCHEDULE_KINDS & set(schedule):
        stored = client.get(path)["schedule"]
        body = {**body, "schedule": {**{k: v for k, v in stored.items() if v is not None}, **schedule}}
    refuse_a_zone_for_a_rate(flags, body.get("schedule"))
    return body


BodyFile = Annotated[
    Path | None,
    typer.Option("--file", "-f", help="The request body as JSON, or - for stdin; the flags given override its fields."),
]


# ---------------------------------------------------------------- jobs


@jobs_app.command("create")
@api_command
def jobs_create(
    *,
    name: Annotated[str | None, typer.Option("--name", help="A name for people.")] = None,
    job_type: Annotated[str | None, typer.Option("--type", help="echo, http, lambda, or a registered type.")] = None,
    session: Session,
    schedule: ScheduleFields,
    policy: PolicyFields,
    fields: JobFields,
    file: BodyFile = None,
    idempotency_key: Annotated[
        str | None, typer.Option("--idempotency-key", help="Retrying with the same key never creates twice.")
    ] = None,
) -> None:
    """Create a job, from flags, or from a JSON body (--file) with flags overriding its fields."""
    flags = {
        **given(name=name, type=job_type, payload=payload_of(fields), schedule=schedule_of(schedule, now()) or None),
        **policy_of(policy),
        **job_settings_of(fields),
    }
    spec = _body(file, "a job: name, type, schedule, ...", flags)
    for field, option in (("name", "--name"), ("type", "--type")):
        if field not in spec:
            raise ConfigError(f"give {option} (or {field!r} in --file)")
    refuse_a_zone_for_a_rate(schedule, spec.get("schedule"))
    spec = {"payload": {}, "schedule": {}, **spec}
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
    tenant: TenantOpt = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your jobs (an admin: a tenant's, with --tenant), newest first."""
    query = {
        "tenant": tenant,
        "state": state,
        "type": job_type,
        "name_prefix": name_prefix,
        "tag": tag,
        "limit": limit,
        "cursor": cursor,
    }
    session.show_page(_listing(session.client, "/v1/jobs", all_pages, **query), render.JOB_COLUMNS, tenant=tenant)


_call_by_id(jobs_app, "get", "One job.", "GET", "/v1/jobs/{job_id}", JobIdArg)


@jobs_app.command("update")
@api_command
def jobs_update(
    job_id: JobIdArg,
    session: Session,
    name: Annotated[str | None, typer.Option("--name", help="A new name.")] = None,
    *,
    schedule: ScheduleFields,
    policy: PolicyFields,
    fields: JobFields,
    file: BodyFile = None,
) -> None:
    """Change a job; a new schedule recomputes its next occurrence. --timezone alone keeps the job's cron."""
    flags = {
        **given(name=name, payload=payload_of(fields), schedule=schedule_of(schedule, now()) or None),
        **policy_of(policy),
        **job_settings_of(fields),
    }
    change = _body(file, "the fields to change", flags)
    if not change:
        raise ConfigError("nothing to change: give at least one option (see --help)")
    path = f"/v1/jobs/{quote(job_id, safe='')}"
    change = _whole_schedule(session.client, path, schedule, change)
    session.show_one(session.client.patch(path, change))


def _job_state_command(action: str, doc: str, method: str, path: str) -> None:
    """`jobs pause|resume|cancel`: one job by its id, or the jobs a selector names (--tag, --job, --all, as
    `freeze` takes them) through POST /v1/bulk/jobs, page after page; a line per job, and exit status 1 if one was
    not found or refused."""

    @jobs_app.command(action, help=doc)
    @api_command
    def command(
        job_id: Annotated[str | None, typer.Argument(help="The job id (or a selector).", show_default=False)] = None,
        *,
        session: Session,
        tags: Annotated[
            list[str] | None,
            typer.Option(
                "--tag", help="The jobs with this tag, key=value; repeatable (all of them).", show_default=False
            ),
        ] = None,
        jobs: Annotated[
            list[str] | None, typer.Option("--job", help="This job; repeatable (up to 100).", show_default=False)
        ] = None,
        every: Annotated[bool, typer.Option("--all", help="Every job of yours.")] = False,
        cursor: Annotated[
            str | None, typer.Option("--cursor", help="Go on from an earlier answer's next_cursor.", show_default=False)
        ] = None,
    ) -> None:
        selectors = given(tags=tags_of(tags), job_ids=jobs or None, all=every or None)
        if (job_id is None) == (not selectors) or len(selectors) > 1:
            raise typer.BadParameter("give a job id, or one of --tag, --job and --all", param_hint="'--tag'")
        if job_id is not None:
            session.show_one(session.client.request(method, path.format(job_id=quote(job_id, safe=""))))
            return
        request: dict[str, Any] = {"action": action, "selector": selectors, **given(cursor=cursor)}
        _bulk(session, "/v1/bulk/jobs", request, render.BULK_JOB_COLUMNS)


def _bulk(
    session: Session, path: str, request: dict[str, Any], columns: list[tuple[str, Callable[[dict[str, Any]], Any]]]
) -> None:
    """A bulk action, page after page (each answer's next_cursor sent back as cursor): a line per item, and exit
    status 1 if one was not found or refused."""
    items: list[dict[str, Any]] = []
    while True:
        answer = session.client.post(path, request)
        items += answer["items"]
        if not answer["next_cursor"]:
            break
        request = {**request, "cursor": answer["next_cursor"]}
    session.show_page({"action": request["action"], "items": items, "next_cursor": None}, columns)
    if any(item["outcome"] in ("not_found", "refused") for item in items):
        raise typer.Exit(EXIT_BULK_INCOMPLETE)


_job_state_command(
    "pause", "Pause a job, or the jobs --tag, --job or --all name; idempotent.", "POST", "/v1/jobs/{job_id}/pause"
)
_job_state_command(
    "resume",
    "Resume a paused job, or the jobs --tag, --job or --all name; idempotent; missed occurrences follow the "
    "misfire rule.",
    "POST",
    "/v1/jobs/{job_id}/resume",
)
_job_state_command(
    "cancel", "Cancel a job, or the jobs --tag, --job or --all name; idempotent.", "DELETE", "/v1/jobs/{job_id}"
)


@jobs_app.command("trigger")
@api_command
def jobs_trigger(
    job_id: JobIdArg,
    session: Session,
    payload: Annotated[str | None, typer.Option("--payload", help="This run's payload (JSON object).")] = None,
    debounce: Annotated[str | None, DEBOUNCE_OPTION] = None,
    debounce_collect: Annotated[bool, DEBOUNCE_COLLECT_OPTION] = False,
) -> None:
    """Run a job now, once, outside its schedule; debounced, in the run at the end of its key's window."""
    body = given(
        payload=json_object(payload, "--payload", "the payload") if payload is not None else None,
        debounce=debounce_of(debounce, debounce_collect),
    )
    path = f"/v1/jobs/{quote(job_id, safe='')}/trigger"
    session.show_one(session.client.post(path, body) if body else session.client.post(path))


# ---------------------------------------------------------------- preview and backfill

PreviewCount = Annotated[int | None, typer.Option("--count", help="How many occurrences (1-1000; default 5).")]


@jobs_app.command("preview")
@api_command
def jobs_preview(job_id: JobIdArg, session: Session, count: PreviewCount = None) -> None:
    """A job's next occurrences, as it will run them, with DST flags (gap, fold) and what blocks them (a
    calendar, a freeze) and what becomes of them."""
    page = session.client.get(f"/v1/jobs/{quote(job_id, safe='')}/preview", count=count)
    session.show_page({**page, "next_cursor": None}, render.JOB_PREVIEW_COLUMNS)


@schedules_app.command("preview")
@api_command
def schedules_preview(
    session: Session,
    *,
    schedule: ScheduleFields,
    count: PreviewCount = None,
    since: Annotated[
        str | None, typer.Option("--from", help="Occurrences after this time: ISO-8601, now, or +1d (default now).")
    ] = None,
) -> None:
    """A schedule's next occurrences, with DST flags (gap, fold), before it is a job's."""
    current = now()
    since_at = parse_at(since, current, "--from") if since is not None else None
    body = {"schedule": schedule_of(schedule, current), **given(count=count, **{"from": since_at})}
    page = session.client.post("/v1/schedules/preview", body)
    session.show_page({**page, "next_cursor": None}, render.PREVIEW_COLUMNS)


@jobs_app.command("backfill")
@api_command
def jobs_backfill(
    job_id: JobIdArg,
    session: Session,
    since: Annotated[str, typer.Option("--from", help="The first past occurrence to run (ISO-8601, now, -1d).")],
    until: Annotated[str, typer.Option("--to", help="The last (ISO-8601, now, -1h); at most 31 days after --from.")],
    max_runs: Annotated[int | None, typer.Option("--max-runs", help="At most this many runs (1-1000; 100).")] = None,
) -> None:
    """Run a job's past occurrences in [--from, --to], each once: a repeat creates none it already made."""
    current = now()
    body = {"from": parse_at(since, current, "--from"), "to": parse_at(until, current, "--to")}
    session.show_one(
        session.client.post(f"/v1/jobs/{quote(job_id, safe='')}/backfill", body | given(max_runs=max_runs))
    )


# ---------------------------------------------------------------- runs


@runs_app.command("list", epilog="With --wait: " + EXIT_STATUS_HELP)
@api_command
def runs_list(
    job_id: JobIdArg,
    session: Session,
    status: Annotated[str | None, typer.Option("--status", help="Only runs with this status.")] = None,
    started: Annotated[
        bool,
        typer.Option("--started", help="Only runs that started, not QUEUED ones to come (--limit 1: the last run)."),
    ] = False,
    *,
    listing: RunsListing,
) -> None:
    """Runs of a job, newest first."""
    _watch(session, f"/v1/jobs/{job_id}/runs", status, listing, render.RUN_COLUMNS, TERMINAL, started=started)


# A runs search's filters (GET /v1/runs): `runs search` lists what they find, `runs retry` re-queues it.
StatusFilter = Annotated[str | None, typer.Option("--status", help="Only runs with this status.")]
JobFilter = Annotated[str | None, typer.Option("--job", help="Only this job's runs.")]
WorkflowFilter = Annotated[str | None, typer.Option("--workflow", help="Only this workflow's steps' runs.")]
TypeFilter = Annotated[str | None, typer.Option("--type", help="Only runs of jobs of this type.")]
TagFilter = Annotated[str | None, typer.Option("--tag", help="Only runs of jobs tagged so: key=value.")]
TriggerFilter = Annotated[str | None, typer.Option("--trigger", help="schedule, manual or backfill.")]
ErrorTypeFilter = Annotated[str | None, typer.Option("--error-type", help="Only runs whose error is of this type.")]
FromFilter = Annotated[str | None, typer.Option("--from", help="From this instant (ISO-8601, now, -1h).")]
ToFilter = Annotated[str | None, typer.Option("--to", help="Up to this instant (ISO-8601, now, -10m).")]
EndedFilter = Annotated[bool, typer.Option("--ended", help="--from/--to bound when runs ended, not their time.")]


def run_filters(
    *,
    status: str | None,
    job_id: str | None,
    workflow_id: str | None,
    job_type: str | None,
    tag: str | None,
    trigger: str | None,
    error_type: str | None,
    since: str | None,
    until: str | None,
    ended: bool,
) -> dict[str, Any]:
    """The filters given, as GET /v1/runs (and POST /v1/bulk/runs) name them."""
    return given(
        status=status,
        job_id=job_id,
        workflow_id=workflow_id,
        type=job_type,
        tag=tag,
        trigger=trigger,
        error_type=error_type,
        **{
            "from": parse_at(since, option="--from") if since is not None else None,
            "to": parse_at(until, option="--to") if until is not None else None,
        },
        on="ended_at" if ended else None,
    )


@runs_app.command("search")
@api_command
def runs_search(
    session: Session,
    status: StatusFilter = None,
    job_id: JobFilter = None,
    workflow_id: WorkflowFilter = None,
    job_type: TypeFilter = None,
    tag: TagFilter = None,
    trigger: TriggerFilter = None,
    error_type: ErrorTypeFilter = None,
    since: FromFilter = None,
    until: ToFilter = None,
    ended: EndedFilter = False,
    tenant: TenantOpt = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your runs across every job and workflow, newest first: what failed in the last hour is
    `runs search --status FAILED --from -1h --ended`."""
    filters = run_filters(
        status=status,
        job_id=job_id,
        workflow_id=workflow_id,
        job_type=job_type,
        tag=tag,
        trigger=trigger,
        error_type=error_type,
        since=since,
        until=until,
        ended=ended,
    )
    query = {"tenant": tenant, **filters, "limit": limit, "cursor": cursor}
    session.show_page(_listing(session.client, "/v1/runs", all_pages, **query), render.RUN_COLUMNS, tenant=tenant)


@runs_app.command("stuck")
@api_command
def runs_stuck(session: Session, tenant: TenantOpt = None, limit: Limit = None) -> None:
    """Your stuck runs (an admin: a tenant's, with --tenant): QUEUED over 5 minutes past their time, or RUNNING
    past their lease; oldest first."""
    page = session.client.get("/v1/runs/stuck", **given(tenant=tenant, limit=limit))
    if session.as_json:
        typer.echo(render.as_json(page))
        return
    columns = render.STUCK_RUN_COLUMNS
    typer.echo(
        render.items_table(
            render.stuck_rows(page), [render.TENANT_COLUMN, *columns] if tenant == EVERY_TENANT else columns
        )
    )
    if page["more"]:
        typer.echo("more are stuck than listed (the oldest are)", err=True)


_call_by_id(runs_app, "get", "One run.", "GET", "/v1/runs/{run_id}", RunIdArg)


@runs_app.command("watch", epilog=EXIT_STATUS_HELP)
@api_command
def runs_watch(
    run_id: RunIdArg,
    session: Session,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls.")] = 2,
    wait_timeout: Annotated[float, typer.Option("--wait-timeout", help="Give up after this many seconds.")] = 900,
) -> None:
    """Follow one run until it ends: a line each time its status or progress changes, then the run; the exit
    status says how it ended."""
    said, waited = "", 0.0
    while True:
        run = session.client.get(f"/v1/runs/{run_id}")
        news = render.progress_line(run)
        if news != said:  # to stderr, so that stdout is the run alone (as `runs get` shows it)
            typer.echo(news, err=True)
            said = news
        if run["status"] in TERMINAL:
            session.show_one(run)
            raise typer.Exit(exit_status_of([run["status"]]))
        if waited >= wait_timeout:
            typer.echo(f"tickwork: run still unfinished after {wait_timeout:g} s", err=True)
            raise typer.Exit(EXIT_TIMEOUT)
        sleep(interval)
        waited += interval


@runs_app.command("result")
@api_command
def runs_result(run_id: RunIdArg, session: Session, tenant: TenantOpt = None) -> None:
    """The run's result document (JSON), as stored; JSON whatever --output says."""
    typer.echo(render.as_json(session.client.get(f"/v1/runs/{run_id}/result", **given(tenant=tenant))))


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


@runs_app.command("retry")
@api_command
def runs_retry(
    run_id: Annotated[
        str | None, typer.Argument(help="The run id (or a runs search's filters).", show_default=False)
    ] = None,
    *,
    session: Session,
    start_over: Annotated[
        bool, typer.Option("--start-over", help="Remove the run's checkpoint and steps: it starts from the beginning.")
    ] = False,
    payload: Annotated[
        str | None, typer.Option("--payload", help="Run it with this payload instead (a JSON object).")
    ] = None,
    payload_file: Annotated[
        Path | None, typer.Option("--payload-file", help="Read that payload from a file, or - for stdin.")
    ] = None,
    runs: Annotated[
        list[str] | None, typer.Option("--run", help="This run; repeatable (up to 100).", show_default=False)
    ] = None,
    status: Annotated[str | None, typer.Option("--status", help="FAILED, the only status retried.")] = None,
    job_id: JobFilter = None,
    workflow_id: WorkflowFilter = None,
    job_type: TypeFilter = None,
    tag: TagFilter = None,
    trigger: TriggerFilter = None,
    error_type: ErrorTypeFilter = None,
    since: FromFilter = None,
    until: ToFilter = None,
    ended: EndedFilter = False,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="Go on from an earlier answer's next_cursor.", show_default=False)
    ] = None,
) -> None:
    """Re-queue a FAILED run; its attempts start again, from its last checkpoint (docs/durable-runs.md). With
    --payload, it runs with that payload, checked by its job type; the run and the audit trail say it was edited.
    With --run, or a runs search's filters instead of an id (`runs retry --status FAILED --job ID --from -1h`),
    every FAILED run they name or find, through POST /v1/bulk/runs, page after page: a line per run, and exit
    status 1 if one was not found or refused."""
    filters = run_filters(
        status=status,
        job_id=job_id,
        workflow_id=workflow_id,
        job_type=job_type,
        tag=tag,
        trigger=trigger,
        error_type=error_type,
        since=since,
        until=until,
        ended=ended,
    )
    if run_id is not None:
        if filters or runs or cursor:
            raise typer.BadParameter("give a run id, or --run, or a search's filters", param_hint="'--run'")
        body = given(payload=payload_given(payload, payload_file), from_checkpoint=False if start_over else None)
        session.show_one(session.client.post(f"/v1/runs/{run_id}/retry", body or None))
        return
    if (not filters) == (not runs) or payload is not None or payload_file is not None or start_over:
        raise typer.BadParameter(
            "give a run id, or one of --run and a search's filters (--payload and --start-over take a run id)",
            param_hint="'--run'",
        )
    selected = {"run_ids": runs} if runs else {"filters": filters}
    _bulk(session, "/v1/bulk/runs", {"action": "retry", **selected, **given(cursor=cursor)}, render.BULK_RUN_COLUMNS)


_call_by_id(
    runs_app,
    "skip",
    "Skip a FAILED run that blocks its ordering key: the key's next run goes; the run stays FAILED.",
    "POST",
    "/v1/runs/{run_id}/skip",
    RunIdArg,
)
_call_by_id(
    runs_app,
    "cancel",
    "Ask a RUNNING run (or a durable run between its segments) to stop: it is recorded SKIPPED `cancelled`.",
    "POST",
    "/v1/runs/{run_id}/cancel",
    RunIdArg,
)


# ---------------------------------------------------------------- dlq


def on_a_terminal() -> bool:
    """Someone is there to ask: stdin and stderr (where the question goes) are a terminal."""
    return sys.stdin.isatty() and sys.stderr.isatty()


@dlq_app.command("list")
@api_command
def dlq_list(
    session: Session,
    tenant: TenantOpt = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your FAILED runs (an admin: a tenant's, with --tenant), newest first; RETRY says whether a retry re-queues
    each, or why not."""
    page = _listing(session.client, "/v1/dlq", all_pages, tenant=tenant, limit=limit, cursor=cursor)
    session.show_page(page, render.DLQ_COLUMNS, tenant=tenant)


@dlq_app.command("redrive")
@api_command
def dlq_redrive(
    session: Session,
    run_ids: Annotated[list[str] | None, typer.Argument(help="Runs to re-queue.")] = None,
    all_runs: Annotated[
        bool, typer.Option("--all", help="Re-queue every FAILED run (250 a call). Asked for on a terminal.")
    ] = False,
) -> None:
    """Re-queue the FAILED runs named, or all your FAILED runs (--all). Exit status 1, each with its reason, when
    a run was not re-queued (unknown, not FAILED, or not retried so: `dlq list` says why; `dlq dismiss` it)."""
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
    else:
        typer.echo(f"redriven: {result['redriven']}")
    if result.get("more"):
        typer.echo("more FAILED runs remain: run it again", err=True)
    if result.get("not_redriven"):
        # Each with why, and a failing exit status: a script must not take a refused redrive for a done one.
        reasons = {item["run_id"]: item for item in result.get("refused", [])}
        for run_id in result["not_redriven"]:
            item = reasons.get(run_id, {})
            typer.echo(f"not redriven: {run_id}: {item.get('reason', '?')}: {item.get('message', '')}", err=True)
        raise typer.Exit(EXIT_NOT_REDRIVEN)


_call_by_id(
    dlq_app,
    "dismiss",
    "Take a FAILED run out of the DLQ without a retry (its record is kept, and says who); idempotent.",
    "POST",
    "/v1/dlq/{run_id}/dismiss",
    RunIdArg,
)


# ---------------------------------------------------------------- dead-letters


def _last_redrive(queue: dict[str, Any]) -> str:
    last = queue.get("last_redrive")
    if not last:
        return "-"
    text = f"{last['status']} {last['moved']}/{last['to_move']} since {last['started_at']}"
    return f"{text}: {last['failure']}" if last.get("failure") else text


DEAD_LETTER_COLUMNS = [
    ("BAND", lambda q: q["band"]),
    ("MESSAGES", lambda q: q["messages"]),
    ("IN FLIGHT", lambda q: q["in_flight"]),
    ("LAST REDRIVE", _last_redrive),
]
BANDS = ("high", "normal", "low")


@dead_letters_app.command("list")
@api_command
def dead_letters_list(session: Session) -> None:
    """How many messages each band's SQS dead-letter queue holds, and its latest redrive."""
    session.show_page(session.client.get("/v1/dead-letters"), DEAD_LETTER_COLUMNS)


@dead_letters_app.command("redrive")
@api_command
def dead_letters_redrive(
    session: Session,
    bands: Annotated[
        list[str] | None, typer.Option("--band", help="A band to redrive (repeat it); every band if left out.")
    ] = None,
) -> None:
    """Move the SQS dead-letter queues' messages back to their band's queue (SQS's message move task)."""
    chosen = bands or list(BANDS)
    unknown = [band for band in chosen if band not in BANDS]
    if unknown:
        raise typer.BadParameter(f"{', '.join(unknown)}: a band is one of {', '.join(BANDS)}", param_hint="'--band'")
    result = session.client.post("/v1/dead-letters/redrive", {"bands": chosen})
    if session.as_json:
        typer.echo(render.as_json(result))
        return
    typer.echo(f"moving back: {', '.join(result['started'])}")
    if result.get("running"):
        typer.echo(f"still moving from an earlier redrive: {', '.join(result['running'])}", err=True)
    typer.echo("`tickwork dead-letters list` shows the progress", err=True)


# ---------------------------------------------------------------- workflows


WORKFLOW_BODY = "a workflow: name, schedule, steps, ..."


def _workflow_flags(name: str | None, schedule: ScheduleFields, policy: PolicyFields) -> dict[str, Any]:
    return {**given(name=name, schedule=schedule_of(schedule, now()) or None), **policy_of(policy)}


@workflows_app.command("create")
@api_command
def workflows_create(
    *,
    file: Annotated[
        Path, typer.Option("--file", "-f", help="The workflow as JSON (name, schedule, steps, ...), or - for stdin.")
    ],
    session: Session,
    name: Annotated[str | None, typer.Option("--name", help="A name for people (overrides the file's).")] = None,
    schedule: ScheduleFields,
    policy: PolicyFields,
) -> None:
    """Create a workflow from its definition (see docs/workflows.md); the flags given override its fields."""
    spec = _body(file, WORKFLOW_BODY, _workflow_flags(name, schedule, policy))
    refuse_a_zone_for_a_rate(schedule, spec.get("schedule"))
    session.show_one(session.client.post("/v1/workflows", spec))


@workflows_app.command("update")
@api_command
def workflows_update(
    workflow_id: WorkflowIdArg,
    session: Session,
    name: Annotated[str | None, typer.Option("--name", help="A new name.")] = None,
    *,
    schedule: ScheduleFields,
    policy: PolicyFields,
    file: BodyFile = None,
) -> None:
    """Change a workflow; runs in progress keep the definition they started with.

    New steps come by --file. --timezone alone keeps the workflow's cron.
    """
    change = _body(file, "the fields to change", _workflow_flags(name, schedule, policy))
    if not change:
        raise ConfigError("nothing to change: give at least one option (see --help)")
    path = f"/v1/workflows/{quote(workflow_id, safe='')}"
    change = _whole_schedule(session.client, path, schedule, change)
    session.show_one(session.client.patch(path, change))


@workflows_app.command("list")
@api_command
def workflows_list(
    session: Session,
    state: Annotated[str | None, typer.Option("--state", help="ACTIVE, PAUSED, CANCELLED or COMPLETED.")] = None,
    name_prefix: Annotated[str | None, typer.Option("--name-prefix", help="Only names starting so.")] = None,
    tenant: TenantOpt = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your workflows (an admin: a tenant's, with --tenant), newest first."""
    query = {"tenant": tenant, "state": state, "name_prefix": name_prefix, "limit": limit, "cursor": cursor}
    workflows = _listing(session.client, "/v1/workflows", all_pages, **query)
    session.show_page(workflows, render.WORKFLOW_COLUMNS, tenant=tenant)


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


@workflow_runs_app.command("list", epilog="With --wait: " + EXIT_STATUS_HELP)
@api_command
def workflow_runs_list(
    workflow_id: WorkflowIdArg,
    session: Session,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="RUNNING, SUCCEEDED, FAILED, SKIPPED, CANCELLED, COMPENSATING, COMPENSATED or COMPENSATION_FAILED.",
        ),
    ] = None,
    *,
    listing: RunsListing,
) -> None:
    """Runs of a workflow, newest first, with each step's state."""
    path = f"/v1/workflows/{workflow_id}/runs"
    _watch(session, path, status, listing, render.WORKFLOW_RUN_COLUMNS, WORKFLOW_RUN_TERMINAL)


WORKFLOW_RUN_PATH = "/v1/workflow-runs/{workflow_run_id}"
WORKFLOW_RUN_GET = "One workflow run, with every step's state and run id (`tickwork runs get` shows a step's run)."
_call_by_id(workflow_runs_app, "get", WORKFLOW_RUN_GET, "GET", WORKFLOW_RUN_PATH, WorkflowRunIdArg)


@workflow_runs_app.command("cancel")
@api_command
def workflow_runs_cancel(
    workflow_run_id: WorkflowRunIdArg,
    session: Session,
    compensate: Annotated[
        bool, typer.Option("--compensate", help="Compensate the steps that succeeded (docs/workflows.md).")
    ] = False,
) -> None:
    """Cancel a RUNNING workflow run: steps not started are skipped, running ones asked to stop."""
    body = {"compensate": True} if compensate else None
    session.show_one(session.client.post(f"/v1/workflow-runs/{workflow_run_id}/cancel", body))


WORKFLOW_RUN_RETRY = (
    "Re-run a FAILED workflow run's failed steps and what they skipped; nothing that succeeded runs again."
)
_call_by_id(workflow_runs_app, "retry", WORKFLOW_RUN_RETRY, "POST", WORKFLOW_RUN_PATH + "/retry", WorkflowRunIdArg)
# The old verbs, under workflows, kept for a release; not listed.
workflows_app.command("runs", hidden=True, epilog="With --wait: " + EXIT_STATUS_HELP)(workflow_runs_list)
workflows_app.command("cancel-run", hidden=True)(workflow_runs_cancel)
for _old, _doc, _method, _path in (
    ("get-run", WORKFLOW_RUN_GET, "GET", WORKFLOW_RUN_PATH),
    ("show-run", WORKFLOW_RUN_GET, "GET", WORKFLOW_RUN_PATH),
    ("retry-run", WORKFLOW_RUN_RETRY, "POST", WORKFLOW_RUN_PATH + "/retry"),
):
    _call_by_id(workflows_app, _old, _doc, _method, _path, WorkflowRunIdArg, hidden=True)


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


@app.command("audit")
@api_command
def audit(
    session: Session,
    resource: Annotated[str | None, typer.Option("--resource", help="Only records of this resource id.")] = None,
    actor: Annotated[
        str | None, typer.Option("--actor", help="Only records of this actor: its id (an ARN) or display name.")
    ] = None,
    action: Annotated[str | None, typer.Option("--action", help="Only records of this action (job.pause).")] = None,
    since: Annotated[
        str | None, typer.Option("--from", help="Since this ISO-8601 time, or -1d / -2h from now (default: -7d).")
    ] = None,
    until: Annotated[str | None, typer.Option("--to", help="Until this time (default: now).")] = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="An admin's: one tenant's records, or `*` (the default: all).")
    ] = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Who changed what through the API, newest first (docs/security.md "Audit trail")."""
    current = now()
    query = {
        "resource": resource,
        "actor": actor,
        "action": action,
        "from": parse_instant(since, "--from", current) if since else None,
        "to": parse_instant(until, "--to", current) if until else None,
        "tenant": tenant,
        "limit": limit,
        "cursor": cursor,
    }
    session.show_page(_listing(session.client, "/v1/audit", all_pages, **query), render.AUDIT_COLUMNS)


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
