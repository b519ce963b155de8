"""`tickwork runs ...`: runs of jobs (a workflow step's run is one too): list a job's, search them all, the stuck
ones, read, follow, fetch results and logs, retry (one, or many by a search's filters), skip, cancel.

    tickwork runs list <job id> --wait
    tickwork runs search --status FAILED --from -1h --ended
    tickwork runs watch <run id> || echo "it did not succeed"
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tickwork_cli import clock, render
from tickwork_cli.bodies import given, payload_given
from tickwork_cli.command_shapes import TERMINAL, bulk, call_by_id, listing, watch
from tickwork_cli.options import (
    EVERY_TENANT,
    EXIT_STATUS_HELP,
    EXIT_TIMEOUT,
    AllPages,
    CursorOpt,
    JobIdArg,
    Limit,
    RunFilters,
    RunIdArg,
    RunsListing,
    Session,
    TenantOpt,
    api_command,
    exit_status_of,
)

runs_app = typer.Typer(help="Runs of jobs: list, inspect, fetch results, retry.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")


@runs_app.command("list", epilog="With --wait: " + EXIT_STATUS_HELP)
@api_command
def runs_list(
    job_id: JobIdArg,
    session: Session,
    status: Annotated[str | None, typer.Option("--status", help="Only runs with this status.")] = None,
    started: Annotated[
        bool,
        typer.Option(
            "--started",
            help="Only runs that started at least once (a retried one too), not QUEUED ones to come (--limit 1: the last run).",
        ),
    ] = False,
    *,
    listing: RunsListing,
) -> None:
    """Runs of a job, newest first."""
    runs = session.client.list_runs(job_id, status=status, started=started or None, page_size=listing.limit)
    watch(session, runs, listing, render.RUN_COLUMNS, TERMINAL)


def run_filters(status: str | None, filters: RunFilters) -> dict[str, Any]:
    """The filters given, as GET /v1/runs (and POST /v1/bulk/runs) name them."""
    return given(
        status=status,
        job_id=filters.job_id,
        workflow_id=filters.workflow_id,
        type=filters.job_type,
        tag=filters.tag,
        trigger=filters.trigger,
        error_type=filters.error_type,
        **{
            "from": clock.parse_at(filters.since, option="--from") if filters.since is not None else None,
            "to": clock.parse_at(filters.until, option="--to") if filters.until is not None else None,
        },
        on="ended_at" if filters.ended else None,
    )


@runs_app.command("search")
@api_command
def runs_search(
    session: Session,
    status: Annotated[str | None, typer.Option("--status", help="Only runs with this status.")] = None,
    *,
    search: RunFilters,
    tenant: TenantOpt = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your runs across every job and workflow, newest first: what failed in the last hour is
    `runs search --status FAILED --from -1h --ended`."""
    runs = session.client.search_runs(tenant=tenant, **run_filters(status, search), page_size=limit)
    session.show_page(listing(runs, all_pages, cursor), render.RUN_COLUMNS, tenant=tenant)


@runs_app.command("stuck")
@api_command
def runs_stuck(session: Session, tenant: TenantOpt = None, limit: Limit = None) -> None:
    """Your stuck runs (an admin: a tenant's, with --tenant): QUEUED over 5 minutes past their time, or RUNNING
    past their lease; oldest first."""
    page = render.plain(session.client.stuck_runs(tenant=tenant, limit=limit))
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


call_by_id(runs_app, "get", "One run.", "get_run", "run_id", RunIdArg)


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
        run = render.plain(session.client.get_run(run_id))
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
        clock.sleep(interval)
        waited += interval


@runs_app.command("result")
@api_command
def runs_result(run_id: RunIdArg, session: Session, tenant: TenantOpt = None) -> None:
    """The run's result document (JSON), as stored; JSON whatever --output says."""
    typer.echo(render.as_json(session.client.run_result(run_id, tenant=tenant)))


@runs_app.command("logs")
@api_command
def runs_logs(run_id: RunIdArg, session: Session) -> None:
    """The lines the run's handler logged (ctx.log), every attempt's, in order."""
    logs = render.plain(session.client.run_logs(run_id))
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
    search: RunFilters,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="Go on from an earlier answer's next_cursor.", show_default=False)
    ] = None,
) -> None:
    """Re-queue a FAILED run; its attempts start again, from its last checkpoint (docs/durable-runs.md). With
    --payload, it runs with that payload, checked by its job type; the run and the audit trail say it was edited.
    With --run, or a runs search's filters instead of an id (`runs retry --status FAILED --job ID --from -1h`),
    every FAILED run they name or find, through POST /v1/bulk/runs, page after page: a line per run, and exit
    status 1 if one was not found or refused."""
    filters = run_filters(status, search)
    if run_id is not None:
        if filters or runs or cursor:
            raise typer.BadParameter("give a run id, or --run, or a search's filters", param_hint="'--run'")
        body = given(payload=payload_given(payload, payload_file), from_checkpoint=False if start_over else None)
        session.show_one(session.client.retry_run(run_id, body or None))
        return
    if (not filters) == (not runs) or payload is not None or payload_file is not None or start_over:
        raise typer.BadParameter(
            "give a run id, or one of --run and a search's filters (--payload and --start-over take a run id)",
            param_hint="'--run'",
        )
    selected = {"run_ids": runs} if runs else {"filters": filters}
    request = {"action": "retry", **selected, **given(cursor=cursor)}
    bulk(session, session.client.bulk_runs, request, render.BULK_RUN_COLUMNS)


call_by_id(
    runs_app,
    "skip",
    "Skip a FAILED run that blocks its ordering key: the key's next run goes; the run stays FAILED.",
    "skip_run",
    "run_id",
    RunIdArg,
)
call_by_id(
    runs_app,
    "cancel",
    "Ask a RUNNING run (or a durable run between its segments) to stop: it is recorded SKIPPED `cancelled`.",
    "cancel_run",
    "run_id",
    RunIdArg,
)
