"""`tickwork metrics ...`: the scheduler's figures (start lateness, outcomes, retries, queue lag, utilisation) as
time series, the console's charts' data, and the catalogue of the figures there are.

    tickwork metrics catalogue
    tickwork metrics get --names lateness_p99,runs_failed --from -6h --period 300
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tickwork_cli import clock, render
from tickwork_cli.bodies import parse_instant
from tickwork_cli.options import Session, api_command

metrics_app = typer.Typer(
    help="The scheduler's figures as time series (the console's charts), and their catalogue.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(metrics_app, name="metrics")


def _latest(series: dict[str, Any]) -> Any:
    """The last point that has a value, at its time: `412.0 at 2026-11-21T11:55:00Z`."""
    points = [
        (at, value) for at, value in zip(series["timestamps"], series["values"], strict=True) if value is not None
    ]
    return f"{points[-1][1]:g} at {points[-1][0]}" if points else None


SERIES_COLUMNS = [
    ("NAME", lambda s: s["name"]),
    ("BY", lambda s: ",".join(f"{k}={v}" for k, v in s["dimensions"].items()) or "total"),
    ("UNIT", lambda s: s["unit"]),
    ("POINTS", lambda s: sum(value is not None for value in s["values"])),
    ("LATEST", _latest),
]
CATALOGUE_COLUMNS = [
    ("NAME", lambda c: c["name"]),
    ("LABEL", lambda c: c["label"]),
    ("UNIT", lambda c: c["unit"]),
    ("BY", lambda c: ",".join(c["dimensions"]) or None),
]


@metrics_app.command("get")
@api_command
def metrics_get(
    session: Session,
    names: Annotated[
        str | None,
        typer.Option("--names", help="Comma-separated names from `metrics catalogue` (default: every one)."),
    ] = None,
    period: Annotated[
        int | None, typer.Option("--period", help="Seconds a point: 60 to 3600, a multiple of 60 (default 60).")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--from", help="From this instant (ISO-8601, -6h; default: -1h).")
    ] = None,
    until: Annotated[str | None, typer.Option("--to", help="Up to this instant (default: now; at most 24 h).")] = None,
    band: Annotated[str | None, typer.Option("--band", help="Only this band's series: high, normal or low.")] = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="An admin's: this tenant's figures (default: the totals).")
    ] = None,
) -> None:
    """The scheduler's figures over a time range, a point each period: a series a line, with its latest point
    (every point with --output json)."""
    current = clock.now()
    figures = session.client.metrics(
        names=names,
        period=period,
        start=parse_instant(since, "--from", current) if since is not None else None,
        end=parse_instant(until, "--to", current) if until is not None else None,
        band=band,
        tenant=tenant,
    )
    if session.as_json:
        session.show_one(figures)
        return
    shown = render.plain(figures)
    session.show_page({"items": shown["series"], "next_cursor": None}, SERIES_COLUMNS)
    typer.echo(f"from {shown['start']} to {shown['end']}, a point every {shown['period']} s", err=True)


@metrics_app.command("catalogue")
@api_command
def metrics_catalogue(session: Session) -> None:
    """The figures `metrics get` serves: each name, what it measures, its unit and its breakdowns."""
    session.show_page(session.client.metrics_catalogue(), CATALOGUE_COLUMNS)
