"""`tickwork calendars ...`, `tickwork freeze` and `tickwork unfreeze`: calendars and freezes (docs/operations.md)
over the HTTP API.

    tickwork freeze --for 30m --tag team=payments --reason "deploy 1.42"   # prints the freeze id
    tickwork unfreeze <freeze id>
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from tickwork_cli.bodies import given, json_object_file, parse_duration, parse_instant, tags_of
from tickwork_cli.options import Output, Session, TenantOpt, api_command

calendars_app = typer.Typer(
    help="Calendars: blackouts (exclude) and maintenance windows (include) your jobs name.", no_args_is_help=True
)
CalendarIdArg = Annotated[str, typer.Argument(help="The calendar id.")]
CalendarFile = Annotated[
    Path, typer.Option("--file", "-f", help="The calendar as JSON (name, timezone, mode, windows), or - for stdin.")
]
_clock: list[Callable[[], datetime]] = [lambda: datetime.now(UTC)]  # the CLI's, set by `register`
CALENDAR_COLUMNS = [(name, lambda item, name=name: item.get(name)) for name in ("id", "name", "mode", "timezone")]


def _path(calendar_id: str) -> str:
    return f"/v1/calendars/{calendar_id}"


@calendars_app.command("create")
@api_command
def calendars_create(file: CalendarFile, session: Session) -> None:
    """Create a calendar from its JSON document."""
    session.show_one(session.client.post("/v1/calendars", json_object_file(file, "calendar")))


@calendars_app.command("list")
@api_command
def calendars_list(session: Session, tenant: TenantOpt = None) -> None:
    """Your calendars (an admin: a tenant's, with --tenant)."""
    session.show_page(session.client.get("/v1/calendars", **given(tenant=tenant)), CALENDAR_COLUMNS)


@calendars_app.command("get")
@api_command
def calendars_get(calendar_id: CalendarIdArg, session: Session, tenant: TenantOpt = None) -> None:
    """One calendar (an admin: a tenant's, with --tenant)."""
    session.show_one(session.client.get(_path(calendar_id), **given(tenant=tenant)))


@calendars_app.command("replace")
@api_command
def calendars_replace(calendar_id: CalendarIdArg, file: CalendarFile, session: Session) -> None:
    """Replace a calendar, the whole document: the occurrences not yet claimed follow it."""
    session.show_one(session.client.put(_path(calendar_id), json_object_file(file, "calendar")))


@calendars_app.command("delete")
@api_command
def calendars_delete(calendar_id: CalendarIdArg, session: Session) -> None:
    """Delete a calendar; a job still naming it runs as if it did not."""
    session.show_one(session.client.delete(_path(calendar_id)))


# ---------------------------------------------------------------- freezes


def freeze(
    session: Session,
    reason: Annotated[str, typer.Option("--reason", help="Why: shown on the freeze and in its runs' records.")],
    for_: Annotated[
        str | None, typer.Option("--for", metavar="DURATION", help="How long: 30m, 1h30m, 2d (or give --until).")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", help="When it ends: an instant, or +1h from now.")] = None,
    since: Annotated[str | None, typer.Option("--from", help="When it starts (default: now).")] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="Freeze the jobs with this tag, key=value; repeatable (all of them)."),
    ] = None,
    job: Annotated[list[str] | None, typer.Option("--job", metavar="ID", help="Freeze this job; repeatable.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Freeze all your jobs and workflows.")] = False,
    on_blocked: Annotated[
        str | None, typer.Option("--on-blocked", help="SKIP (default) the runs inside it, or DEFER them to its end.")
    ] = None,
    every_tenant: Annotated[bool, typer.Option("--every-tenant", help="Every tenant's jobs (an admin's).")] = False,
) -> None:
    """Freeze jobs for a while (a deploy); prints the freeze's id, for `tickwork unfreeze`."""
    current = _clock[0]()
    selector = given(tags=tags_of(tag), job_ids=job or None, all=True if all_ else None)
    body = given(
        selector=selector,
        reason=reason,
        for_seconds=parse_duration(for_, "--for") if for_ is not None else None,
        until=parse_instant(until, "--until", current) if until is not None else None,
        on_blocked=on_blocked,
        every_tenant=True if every_tenant else None,
        **{"from": parse_instant(since, "--from", current) if since is not None else None},
    )
    created = session.client.post("/v1/freezes", body)
    if session.output is Output.json:
        session.show_one(created)
    else:
        typer.echo(created["id"])  # alone, even when piped: `FREEZE=$(tickwork freeze ...)` in a deploy script


def unfreeze(freeze_id: Annotated[str, typer.Argument(help="The freeze id.")], session: Session) -> None:
    """Lift a freeze now: the occurrences from now on run."""
    session.show_one(session.client.delete(f"/v1/freezes/{freeze_id}"))


def register(app: typer.Typer, now: Callable[[], datetime]) -> None:
    """The calendars group and the freeze commands, on the `tickwork` app; `now` is the CLI's clock."""
    _clock[0] = now
    app.add_typer(calendars_app, name="calendars")
    app.command("freeze")(api_command(freeze))
    app.command("unfreeze")(api_command(unfreeze))
