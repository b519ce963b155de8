"""`tickwork freezes ...`: freezes (docs/operations.md), which stop the jobs they select for a while (a deploy),
over the HTTP API: create, list, get, and lift one early.

    tickwork freezes create --for 30m --tag team=payments --reason "deploy 1.42"   # prints the freeze id
    tickwork freezes lift <freeze id>

The old verbs (`tickwork freeze`, `tickwork unfreeze`) still work, unlisted, until the next release.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from tickwork_cli import clock, render
from tickwork_cli.bodies import given, parse_duration, parse_instant, tags_of
from tickwork_cli.options import Output, Session, TenantOpt, api_command

freezes_app = typer.Typer(
    help="Freezes: stop the jobs they select for a while (a deploy), and lift them early.", no_args_is_help=True
)
FreezeIdArg = Annotated[str, typer.Argument(help="The freeze id.")]


def register(app: typer.Typer) -> None:
    """The freezes group, and the old freeze verbs, on the `tickwork` app."""
    app.add_typer(freezes_app, name="freezes")
    # The old verbs, kept for a release; not listed.
    app.command("freeze", hidden=True)(api_command(freeze))
    app.command("unfreeze", hidden=True)(api_command(lift))


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
    current = clock.now()
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
    created = render.plain(session.client.create_freeze(body))
    if session.output is Output.json:
        session.show_one(created)
    else:
        typer.echo(created["id"])  # alone, even when piped: `FREEZE=$(tickwork freezes create ...)` in a script


def lift(freeze_id: FreezeIdArg, session: Session) -> None:
    """Lift a freeze now: the occurrences from now on run."""
    session.show_one(session.client.lift_freeze(freeze_id))


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
    freezes = session.client.list_freezes(tenant=tenant)
    session.show_page({"items": freezes, "next_cursor": None}, FREEZE_COLUMNS, tenant=tenant)


@freezes_app.command("get")
@api_command
def freezes_get(freeze_id: FreezeIdArg, session: Session, tenant: TenantOpt = None) -> None:
    """One freeze (an admin: a tenant's, with --tenant)."""
    session.show_one(session.client.get_freeze(freeze_id, tenant=tenant))


freezes_app.command("create")(api_command(freeze))
freezes_app.command("lift")(api_command(lift))
