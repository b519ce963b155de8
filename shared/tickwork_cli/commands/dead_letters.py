"""`tickwork dead-letters ...`: the band queues' SQS dead-letter queues, an admin's: what each holds, and their
redrive.

    tickwork dead-letters redrive --band high
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tickwork_cli import render
from tickwork_cli.options import Session, api_command

dead_letters_app = typer.Typer(
    help="The band queues' SQS dead-letter queues (messages the executor could not process; not FAILED runs, which "
    "are `dlq`'s): read and redrive them, an admin's commands.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(dead_letters_app, name="dead-letters")


def _last_redrive(queue: dict[str, Any]) -> str:
    last = queue.get("last_redrive")
    if not last:
        return "-"
    text = f"{last['status']} {last['moved']}/{last['to_move']} since {last['started_at']}"
    return f"{text}: {last['failure']}" if last.get("failure") else text


DEAD_LETTER_COLUMNS = [
    ("BAND", lambda q: q["band"]),
    ("MESSAGES", lambda q: q["messages"]),
    ("IN FLIGHT", lambda q: q["in_flight"]),
    ("LAST REDRIVE", _last_redrive),
]
BANDS = ("high", "normal", "low")


@dead_letters_app.command("list")
@api_command
def dead_letters_list(session: Session) -> None:
    """How many messages each band's SQS dead-letter queue holds, and its latest redrive."""
    session.show_page(session.client.dead_letters(), DEAD_LETTER_COLUMNS)


@dead_letters_app.command("redrive")
@api_command
def dead_letters_redrive(
    session: Session,
    bands: Annotated[
        list[str] | None, typer.Option("--band", help="A band to redrive (repeat it); every band if left out.")
    ] = None,
) -> None:
    """Move the SQS dead-letter queues' messages back to their band's queue (SQS's message move task)."""
    chosen = bands or list(BANDS)
    unknown = [band for band in chosen if band not in BANDS]
    if unknown:
        raise typer.BadParameter(f"{', '.join(unknown)}: a band is one of {', '.join(BANDS)}", param_hint="'--band'")
    result = render.plain(session.client.redrive_dead_letters({"bands": chosen}))
    if session.as_json:
        typer.echo(render.as_json(result))
        return
    typer.echo(f"moving back: {', '.join(result['started'])}")
    if result.get("running"):
        typer.echo(f"still moving from an earlier redrive: {', '.join(result['running'])}", err=True)
    typer.echo("`tickwork dead-letters list` shows the progress", err=True)
