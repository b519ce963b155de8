"""`tickwork dlq ...`: your FAILED runs (the DLQ as the API keeps it): list them, re-queue them, and dismiss
those a retry cannot re-queue.

    tickwork dlq list
    tickwork dlq redrive <run id> <run id>
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tickwork_cli import render
from tickwork_cli.command_shapes import call_by_id, listing
from tickwork_cli.options import AllPages, CursorOpt, Limit, RunIdArg, Session, TenantOpt, api_command

dlq_app = typer.Typer(help="FAILED runs: list and re-queue them.", no_args_is_help=True)
EXIT_NOT_REDRIVEN = 1  # `dlq redrive` left a run it was asked to re-queue


def register(app: typer.Typer) -> None:
    app.add_typer(dlq_app, name="dlq")


def on_a_terminal() -> bool:
    """Someone is there to ask: stdin and stderr (where the question goes) are a terminal."""
    return sys.stdin.isatty() and sys.stderr.isatty()


@dlq_app.command("list")
@api_command
def dlq_list(
    session: Session,
    tenant: TenantOpt = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your FAILED runs (an admin: a tenant's, with --tenant), newest first; RETRY says whether a retry re-queues
    each, or why not."""
    page = listing(session.client.list_dlq(tenant=tenant, page_size=limit), all_pages, cursor)
    session.show_page(page, render.DLQ_COLUMNS, tenant=tenant)


@dlq_app.command("redrive")
@api_command
def dlq_redrive(
    session: Session,
    run_ids: Annotated[list[str] | None, typer.Argument(help="Runs to re-queue.")] = None,
    all_runs: Annotated[
        bool, typer.Option("--all", help="Re-queue every FAILED run (250 a call). Asked for on a terminal.")
    ] = False,
) -> None:
    """Re-queue the FAILED runs named, or all your FAILED runs (--all). Exit status 1, each with its reason, when
    a run was not re-queued (unknown, not FAILED, or not retried so: `dlq list` says why; `dlq dismiss` it)."""
    if run_ids and all_runs:
        raise typer.BadParameter("name runs, or pass --all; not both", param_hint="'--all'")
    if not run_ids and not all_runs:
        if not on_a_terminal():
            raise typer.BadParameter(
                "name the runs to re-queue, or pass --all for every FAILED run", param_hint="'--all'"
            )
        typer.confirm("Re-queue every FAILED run?", abort=True, err=True)
    result = render.plain(session.client.redrive_dlq({"run_ids": run_ids} if run_ids else {"all": True}))
    if session.as_json:
        typer.echo(render.as_json(result))
    else:
        typer.echo(f"redriven: {result['redriven']}")
    if result.get("more"):
        typer.echo("more FAILED runs remain: run it again", err=True)
    if result.get("not_redriven"):
        # Each with why, and a failing exit status: a script must not take a refused redrive for a done one.
        reasons = {item["run_id"]: item for item in result.get("refused", [])}
        for run_id in result["not_redriven"]:
            item = reasons.get(run_id, {})
            typer.echo(f"not redriven: {run_id}: {item.get('reason', '?')}: {item.get('message', '')}", err=True)
        raise typer.Exit(EXIT_NOT_REDRIVEN)


call_by_id(
    dlq_app,
    "dismiss",
    "Take a FAILED run out of the DLQ without a retry (its record is kept, and says who); idempotent.",
    "dismiss_run",
    "run_id",
    RunIdArg,
)
