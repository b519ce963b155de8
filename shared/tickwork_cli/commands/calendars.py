"""`tickwork calendars ...`: calendars (docs/operations.md), blackouts (exclude) and maintenance windows (include)
your jobs name, over the HTTP API, with the verbs jobs have: list, get, create, update, delete, and what one blocks.

    tickwork calendars update <calendar id> --name "black friday 2027"
    tickwork calendars blocked <calendar id> --days 3

The old verb `calendars replace` still works, unlisted, until the next release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tickwork_cli import clock, render
from tickwork_cli.bodies import given, json_object_file, overlay, parse_instant
from tickwork_cli.client import ConfigError
from tickwork_cli.options import Session, TenantOpt, api_command

calendars_app = typer.Typer(
    help="Calendars: blackouts (exclude) and maintenance windows (include) your jobs name.", no_args_is_help=True
)
CalendarIdArg = Annotated[str, typer.Argument(help="The calendar id.")]
CalendarFile = Annotated[
    Path, typer.Option("--file", "-f", help="The calendar as JSON (name, timezone, mode, windows), or - for stdin.")
]
CalendarName = Annotated[str | None, typer.Option("--name", help="A name for people (overrides the file's).")]
CalendarZone = Annotated[
    str | None, typer.Option("--timezone", help="The IANA zone its windows' wall times are in (default UTC).")
]
CalendarMode = Annotated[
    str | None, typer.Option("--mode", help="exclude (a blackout: nothing runs inside) or include (only inside).")
]
CALENDAR_COLUMNS = [
    ("ID", lambda c: c["id"]),
    ("NAME", lambda c: c["name"]),
    ("MODE", lambda c: c["mode"]),
    ("TIMEZONE", lambda c: c["timezone"]),
    ("WINDOWS", lambda c: len(c["windows"])),
]
CALENDAR_DEFINITION = ("name", "timezone", "mode", "windows")  # what a PUT takes, the calendar whole


def register(app: typer.Typer) -> None:
    app.add_typer(calendars_app, name="calendars")


def _calendar_flags(name: str | None, timezone: str | None, mode: str | None) -> dict[str, str]:
    return given(name=name, timezone=timezone, mode=mode)


@calendars_app.command("create")
@api_command
def calendars_create(
    file: CalendarFile,
    session: Session,
    name: CalendarName = None,
    timezone: CalendarZone = None,
    mode: CalendarMode = None,
) -> None:
    """Create a calendar from its JSON document (see docs/operations.md); the flags given override its fields."""
    body = overlay(json_object_file(file, "calendar"), _calendar_flags(name, timezone, mode))
    session.show_one(session.client.create_calendar(body))


@calendars_app.command("list")
@api_command
def calendars_list(session: Session, tenant: TenantOpt = None) -> None:
    """Your calendars (an admin: a tenant's, with --tenant)."""
    session.show_page({"items": session.client.list_calendars(tenant=tenant)}, CALENDAR_COLUMNS, tenant=tenant)


@calendars_app.command("get")
@api_command
def calendars_get(calendar_id: CalendarIdArg, session: Session, tenant: TenantOpt = None) -> None:
    """One calendar (an admin: a tenant's, with --tenant)."""
    session.show_one(session.client.get_calendar(calendar_id, tenant=tenant))


BLOCKED_COLUMNS = [("FROM", lambda span: span["from"]), ("UNTIL", lambda span: span["until"])]


@calendars_app.command("blocked")
@api_command
def calendars_blocked(
    calendar_id: CalendarIdArg,
    session: Session,
    since: Annotated[
        str | None, typer.Option("--from", help="From this instant: ISO-8601, now, or +1d (default now).")
    ] = None,
    days: Annotated[int | None, typer.Option("--days", help="How many days ahead (1 to 14; default 7).")] = None,
    tenant: TenantOpt = None,
) -> None:
    """What a calendar blocks over the next days: a span a line (its whole answer with --output json)."""
    start = parse_instant(since, "--from", clock.now()) if since is not None else None
    found = render.plain(session.client.calendar_blocked(calendar_id, from_=start, days=days, tenant=tenant))
    if session.as_json:
        session.show_one(found)
        return
    session.show_page({"items": found["spans"], "next_cursor": None}, BLOCKED_COLUMNS)
    if not found["complete"]:
        typer.echo("more: the preview stopped at its bound; ask from the last span on (--from)", err=True)


@calendars_app.command("update")
@api_command
def calendars_update(
    calendar_id: CalendarIdArg,
    session: Session,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", help="Fields to change (name, timezone, mode, windows) as JSON, or - for stdin."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="A new name.")] = None,
    timezone: CalendarZone = None,
    mode: CalendarMode = None,
) -> None:
    """Change a calendar: the fields given (--file's, the flags over them), the others as they are. The
    occurrences not yet claimed follow it."""
    change = overlay(
        json_object_file(file, "the fields to change") if file is not None else {},
        _calendar_flags(name, timezone, mode),
    )
    if not change:
        raise ConfigError("nothing to change: give at least one option (see --help)")
    # The API replaces a calendar whole: the fields not changed are the stored ones.
    stored = render.plain(session.client.get_calendar(calendar_id))
    whole = {field: stored[field] for field in CALENDAR_DEFINITION if field in stored} | change
    session.show_one(session.client.replace_calendar(calendar_id, whole))


@calendars_app.command("replace", hidden=True)
@api_command
def calendars_replace(calendar_id: CalendarIdArg, file: CalendarFile, session: Session) -> None:
    """Replace a calendar, the whole document (the old verb; `calendars update` changes the fields given)."""
    session.show_one(session.client.replace_calendar(calendar_id, json_object_file(file, "calendar")))


@calendars_app.command("delete")
@api_command
def calendars_delete(calendar_id: CalendarIdArg, session: Session) -> None:
    """Delete a calendar; a job still naming it runs as if it did not."""
    session.show_one(session.client.delete_calendar(calendar_id))
