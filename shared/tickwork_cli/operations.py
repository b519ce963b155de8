"""`tickwork calendars ...`: a tenant's calendars (docs/operations.md) over the HTTP API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tickwork_cli.bodies import json_object_file
from tickwork_cli.options import Session, api_command

calendars_app = typer.Typer(
    help="Calendars: blackouts (exclude) and maintenance windows (include) your jobs name.", no_args_is_help=True
)
CalendarIdArg = Annotated[str, typer.Argument(help="The calendar id.")]
CalendarFile = Annotated[
    Path, typer.Option("--file", "-f", help="The calendar as JSON (name, timezone, mode, windows), or - for stdin.")
]
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
def calendars_list(session: Session) -> None:
    """Your calendars."""
    session.show_page(session.client.get("/v1/calendars"), CALENDAR_COLUMNS)


@calendars_app.command("get")
@api_command
def calendars_get(calendar_id: CalendarIdArg, session: Session) -> None:
    """One calendar."""
    session.show_one(session.client.get(_path(calendar_id)))


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
