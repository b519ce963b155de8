"""`tickwork regions ...`: the regions' roles in RegionMode eventual (docs/regions.md), an admin's: which region is
active under which epoch, and a failover.

    tickwork regions status
    tickwork regions failover --to us-east-2            # hands over, then waits until replication has caught up
    tickwork regions failover --to us-east-2 --force    # does not wait; prints the runs that may run twice
"""

from __future__ import annotations

from typing import Annotated

import typer

from tickwork_cli import clock, render
from tickwork_cli.client import ApiError
from tickwork_cli.options import Session, api_command

regions_app = typer.Typer(
    help="The regions' roles (RegionMode eventual): the active region and its epoch, and a failover; admins'.",
    no_args_is_help=True,
)
NOT_CAUGHT_UP = "replication has not caught up"  # in the API's refusal (tickwork.model.regions.FailoverRefusal)
POLL_SECONDS = 5.0


def register(app: typer.Typer) -> None:
    app.add_typer(regions_app, name="regions")


@regions_app.command("status")
@api_command
def regions_status(session: Session) -> None:
    """This region, the mode, and the active region and epoch its replica holds."""
    session.show_one(session.client.region_status())


@regions_app.command("failover")
@api_command
def regions_failover(
    session: Session,
    to: Annotated[str, typer.Option("--to", help="The region to make active.")],
    force: Annotated[
        bool,
        typer.Option("--force", help="Do not wait for replication; the runs that may run twice are printed."),
    ] = False,
    wait: Annotated[
        float, typer.Option("--wait", help="How long to wait for replication to catch up, in seconds.", min=0)
    ] = 300.0,
) -> None:
    """Make REGION active: the first ask hands over (no region active, so the old one stops), and the CLI asks again
    (up to --wait) until replication has caught up with the old active region; it stops when that cannot be told.
    --force: at once."""
    waited = 0.0
    while True:
        try:
            result = render.plain(session.client.fail_over({"to": to, "force": force}))
            break
        except ApiError as refused:
            if refused.status != 409 or NOT_CAUGHT_UP not in refused.detail or waited >= wait:
                raise
            typer.echo(f"{refused.detail}; asking again in {POLL_SECONDS:g} s", err=True)
            clock.sleep(POLL_SECONDS)
            waited += POLL_SECONDS
    if session.as_json:
        typer.echo(render.as_json(result))
        return
    typer.echo(f"active: {result['active_region']} (epoch {result['epoch']}), was {result['previous_region'] or '-'}")
    if result["forced"]:
        twice = result["possibly_twice"]
        typer.echo(f"forced: {len(twice)} run(s) may run twice:", err=True)
        for run_id in twice:
            typer.echo(run_id)
