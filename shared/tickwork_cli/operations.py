"""`tickwork calendars ...` and `tickwork freezes ...`: calendars and freezes (docs/operations.md) over the HTTP
API, with the verbs jobs have (list, get, create, update; delete, or a freeze's lift).

    tickwork freezes create --for 30m --tag team=payments --reason "deploy 1.42"   # prints the freeze id
    tickwork freezes lift <freeze id>
    tickwork calendars update <calendar id> --name "black friday 2027"

The old verbs (`tickwork freeze`, `tickwork unfreeze`, `calendars replace`) still work, unlisted, until the next
release.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from tickwork_cli.bodies import given, json_object_file, overlay, parse_duration, parse_instant, tags_of
from tickwork_cli.client import ConfigError
from tickwork_cli.options import Output, Session, TenantOpt, api_command

calendars_app = typer.Typer(
    help="Calendars: blackouts (exclude) and maintenance windows (include) your jobs name.", no_args_is_help=True
)
freezes_app = typer.Typer(
    help="Freezes: stop the jobs they select for a while (a deploy), and lift them early.", no_args_is_help=True
)
CalendarIdArg = Annotated[str, typer.Argument(help="The calendar id.")]
FreezeIdArg = Annotated[str, typer.Argument(help="The freeze id.")]
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
_clock: list[Callable[[], datetime]] = [lambda: datetime.now(UTC)]  # the CLI's, set by `register`
CALENDAR_COLUMNS = [
    ("ID", lambda c: c["id"]),
    ("NAME", lambda c: c["name"]),
    ("MODE", lambda c: c["mode"]),
    ("TIMEZONE", lambda c: c["timezone"]),
    ("WINDOWS", lambda c: len(c["windows"])),
]
CALENDAR_DEFINITION = ("name", "timezone", "mode", "windows")  # what a PUT takes, the calendar whole


def _path(calendar_id: str) -> str:
    return f"/v1/calendars/{calendar_id}"


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
    session.show_one(session.client.post("/v1/calendars", body))


@calendars_app.command("list")
@api_command
def calendars_list(session: Session, tenant: TenantOpt = None) -> None:
    """Your calendars (an admin: a tenant's, with --tenant)."""
    session.show_page(session.client.get("/v1/calendars", **given(tenant=tenant)), CALENDAR_COLUMNS, tenant=tenant)


@calendars_app.command("get")
@api_command
def calendars_get(calendar_id: CalendarIdArg, session: Session, tenant: TenantOpt = None) -> None:
    """One calendar (an admin: a tenant's, with --tenant)."""
    session.show_one(session.client.get(_path(calendar_id), **given(tenant=tenant)))


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
    start = parse_instant(since, "--from", _clock[0]()) if since is not None else None
    query = given(tenant=tenant, days=days, **{"from": start})
    found = session.client.get(f"{_path(calendar_id)}/blocked", **query)
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
    stored = session.client.get(_path(calendar_id))
    whole = {field: stored[field] for field in CALENDAR_DEFINITION if field in stored} | change
    session.show_one(session.client.put(_path(calendar_id), whole))


@calendars_app.command("replace", hidden=True)
@api_command
def calendars_replace(calendar_id: CalendarIdArg, file: CalendarFile, session: Session) -> None:
    """Replace a calendar, the whole document (the old verb; `calendars update` changes the fields given)."""
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
    """Freeze jobs for a while (a deploy); prints the freeze's id alone (the freeze with --output json), for
    `tickwork freezes lift`."""
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
        typer.echo(created["id"])  # alone, even when piped: `FREEZE=$(tickwork freezes create ...)` in a script


def lift(freeze_id: FreezeIdArg, session: Session) -> None:
    """Lift a freeze now: the occurrences from now on run."""
    session.show_one(session.client.delete(f"/v1/freezes/{freeze_id}"))


def _selector_text(selector: dict[str, Any]) -> str:
    if selector.get("all"):
        return "all"
    if selector.get("tags"):
        return "tags " + ",".join(f"{k}={v}" for k, v in selector["tags"].items())
    return "jobs " + ",".join(selector.get("job_ids") or [])


FREEZE_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("ID", lambda f: f["id"]),
    ("SELECTOR", lambda f: _selector_text(f["selector"])),
    ("FROM", lambda f: f["from"]),
    ("UNTIL", lambda f: f["until"]),
    ("ON BLOCKED", lambda f: f["on_blocked"]),
    ("LIFTED", lambda f: f.get("lifted_at")),
    ("REASON", lambda f: f["reason"]),
]


@freezes_app.command("list")
@api_command
def freezes_list(session: Session, tenant: TenantOpt = None) -> None:
    """Your freezes and those over every tenant, newest first: active, upcoming, and those ended within a day
    (an admin: a tenant's, with --tenant)."""
    page = session.client.get("/v1/freezes", **given(tenant=tenant))
    session.show_page({**page, "next_cursor": None}, FREEZE_COLUMNS, tenant=tenant)


@freezes_app.command("get")
@api_command
def freezes_get(freeze_id: FreezeIdArg, session: Session, tenant: TenantOpt = None) -> None:
    """One freeze (an admin: a tenant's, with --tenant)."""
    session.show_one(session.client.get(f"/v1/freezes/{freeze_id}", **given(tenant=tenant)))


freezes_app.command("create")(api_command(freeze))
freezes_app.command("lift")(api_command(lift))


def register(app: typer.Typer, now: Callable[[], datetime]) -> None:
    """The calendars and freezes groups, and the old freeze verbs, on the `tickwork` app; `now` is the CLI's
    clock."""
    _clock[0] = now
    app.add_typer(calendars_app, name="calendars")
    app.add_typer(freezes_app, name="freezes")
    # The old verbs, kept for a release; not listed.
    app.command("freeze", hidden=True)(api_command(freeze))
    app.command("unfreeze", hidden=True)(api_command(lift))
