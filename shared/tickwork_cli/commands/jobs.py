"""`tickwork jobs ...`: create (one, or up to 25 from a file: create-batch), list, read, change, pause, resume,
cancel (one, or many by a selector), trigger, preview and backfill jobs over the HTTP API.

    tickwork jobs create --name hello --type echo --at +10s --payload '{"hello": "world"}'
    tickwork jobs pause --tag team=payments
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tickwork_cli import clock, render
from tickwork_cli.bodies import (
    debounce_of,
    given,
    job_settings_of,
    json_object,
    json_value_file,
    payload_of,
    policy_of,
    refuse_a_zone_for_a_rate,
    schedule_of,
    tags_of,
)
from tickwork_cli.client import ConfigError
from tickwork_cli.command_shapes import (
    EXIT_BULK_INCOMPLETE,
    bulk,
    call_by_id,
    listing,
    request_body,
    whole_schedule,
)
from tickwork_cli.options import (
    DEBOUNCE_COLLECT_OPTION,
    DEBOUNCE_OPTION,
    AllPages,
    BodyFile,
    CursorOpt,
    JobFields,
    JobIdArg,
    Limit,
    PolicyFields,
    PreviewCount,
    ScheduleFields,
    Session,
    TenantOpt,
    api_command,
)

jobs_app = typer.Typer(help="Create, list, change and run jobs.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(jobs_app, name="jobs")


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
        **given(
            name=name, type=job_type, payload=payload_of(fields), schedule=schedule_of(schedule, clock.now()) or None
        ),
        **policy_of(policy),
        **job_settings_of(fields),
    }
    spec = request_body(file, "a job: name, type, schedule, ...", flags)
    for field, option in (("name", "--name"), ("type", "--type")):
        if field not in spec:
            raise ConfigError(f"give {option} (or {field!r} in --file)")
    refuse_a_zone_for_a_rate(schedule, spec.get("schedule"))
    spec = {"payload": {}, "schedule": {}, **spec}
    session.show_one(session.client.create_job(spec, idempotency_key=idempotency_key))


@jobs_app.command("create-batch")
@api_command
def jobs_create_batch(
    session: Session,
    file: Annotated[
        Path,
        typer.Option("--file", "-f", help='The jobs as JSON: a list, or {"jobs": [...]}; - for stdin. At most 25.'),
    ],
    idempotency_key: Annotated[
        str | None, typer.Option("--idempotency-key", help="Retrying with the same key creates only what was not.")
    ] = None,
) -> None:
    """Create up to 25 jobs in one request, each as `jobs create --file` would: a line per job (exit status 1 if
    one was not created)."""
    given_jobs = json_value_file(file)
    body = {"jobs": given_jobs} if isinstance(given_jobs, list) else given_jobs
    if not isinstance(body, dict) or "jobs" not in body:
        raise ConfigError('--file: give a JSON list of jobs, or {"jobs": [...]}')
    answer = render.plain(session.client.create_jobs_in_batch(body, idempotency_key=idempotency_key))
    session.show_page(answer, render.BATCH_CREATE_COLUMNS)
    if any(item["outcome"] not in ("created", "replayed") for item in answer["items"]):
        raise typer.Exit(EXIT_BULK_INCOMPLETE)


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
    jobs = session.client.list_jobs(
        tenant=tenant, state=state, type=job_type, name_prefix=name_prefix, tag=tag, page_size=limit
    )
    session.show_page(listing(jobs, all_pages, cursor), render.JOB_COLUMNS, tenant=tenant)


call_by_id(jobs_app, "get", "One job.", "get_job", "job_id", JobIdArg)


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
        **given(name=name, payload=payload_of(fields), schedule=schedule_of(schedule, clock.now()) or None),
        **policy_of(policy),
        **job_settings_of(fields),
    }
    change = request_body(file, "the fields to change", flags)
    if not change:
        raise ConfigError("nothing to change: give at least one option (see --help)")
    change = whole_schedule(lambda: session.client.get_job(job_id), schedule, change)
    session.show_one(session.client.update_job(job_id, change))


def _job_state_command(action: str, call: str, doc: str) -> None:
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
            session.show_one(getattr(session.client, call)(job_id))
            return
        request: dict[str, Any] = {"action": action, "selector": selectors, **given(cursor=cursor)}
        bulk(session, session.client.bulk_jobs, request, render.BULK_JOB_COLUMNS)


_job_state_command("pause", "pause_job", "Pause a job, or the jobs --tag, --job or --all name; idempotent.")
_job_state_command(
    "resume",
    "resume_job",
    "Resume a paused job, or the jobs --tag, --job or --all name; idempotent; missed occurrences follow the "
    "misfire rule.",
)
_job_state_command("cancel", "cancel_job", "Cancel a job, or the jobs --tag, --job or --all name; idempotent.")


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
    session.show_one(session.client.trigger_job(job_id, body or None))


@jobs_app.command("preview")
@api_command
def jobs_preview(job_id: JobIdArg, session: Session, count: PreviewCount = None) -> None:
    """A job's next occurrences, as it will run them, with DST flags (gap, fold) and what blocks them (a
    calendar, a freeze) and what becomes of them."""
    page = render.plain(session.client.preview_job(job_id, count=count))
    session.show_page({**page, "next_cursor": None}, render.JOB_PREVIEW_COLUMNS)


@jobs_app.command("variants")
@api_command
def jobs_variants(
    job_id: JobIdArg,
    session: Session,
    window: Annotated[
        str | None, typer.Option("--window", help="How far back: 30m, 24h, 7d, up to 30d (default 24h).")
    ] = None,
) -> None:
    """A job's baseline and variants (docs/versions.md) over a window: runs, success rate, duration p50/p95,
    attempts and cost per run."""
    view = render.plain(session.client.job_variants(job_id, window=window))
    if session.as_json:
        typer.echo(render.as_json(view))
        return
    session.show_page({"items": view["variants"]}, render.VARIANT_COLUMNS)


def _variant_command(action: str, doc: str) -> None:
    """`jobs promote-variant|rollback-variant JOB NAME`: POST /v1/jobs/{id}/variants/{name}/<action>."""

    @jobs_app.command(f"{action}-variant", help=doc)
    @api_command
    def command(
        job_id: JobIdArg,
        name: Annotated[str, typer.Argument(help="The variant's name.", show_default=False)],
        session: Session,
    ) -> None:
        change = session.client.promote_variant if action == "promote" else session.client.rollback_variant
        session.show_one(change(job_id, name))


_variant_command("promote", "Make a variant the job's own: its type and payload become the job's (a new version).")
_variant_command("rollback", "Remove a variant: its share of the runs goes back to the baseline.")


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
    current = clock.now()
    body = {"from": clock.parse_at(since, current, "--from"), "to": clock.parse_at(until, current, "--to")}
    session.show_one(session.client.backfill_job(job_id, body | given(max_runs=max_runs)))
