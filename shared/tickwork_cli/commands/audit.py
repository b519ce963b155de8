"""`tickwork audit`: the audit trail, who changed what through the API, newest first (docs/security.md
"Audit trail").

    tickwork audit --resource <job id> --from -1d
"""

from __future__ import annotations

from typing import Annotated

import typer

from tickwork_cli import clock, render
from tickwork_cli.bodies import parse_instant
from tickwork_cli.command_shapes import listing
from tickwork_cli.options import AllPages, CursorOpt, Limit, Session, api_command


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)


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
    current = clock.now()
    records = session.client.audit(
        resource=resource,
        actor=actor,
        action=action,
        from_=parse_instant(since, "--from", current) if since else None,
        to=parse_instant(until, "--to", current) if until else None,
        tenant=tenant,
        page_size=limit,
    )
    session.show_page(listing(records, all_pages, cursor), render.AUDIT_COLUMNS)
