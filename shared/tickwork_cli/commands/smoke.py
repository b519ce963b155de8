"""`tickwork smoke`: a stack checked end to end by one echo one-shot, which must run once and answer its
payload (the check itself is tickwork_cli.smoke's).

    tickwork smoke --api-url <ApiUrl>
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from tickwork_cli import clock
from tickwork_cli.client import ApiError
from tickwork_cli.options import EXIT_TIMEOUT, Session, api_command
from tickwork_cli.smoke import Smoke, SmokeFailed, SmokeJob, SmokeTimedOut

EXIT_SMOKE_FAILED = 1


def register(app: typer.Typer) -> None:
    app.command("smoke")(smoke)


@api_command
def smoke(
    session: Session,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Fail if the run has not finished this many seconds after the create.")
    ] = 120,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls of the run.")] = 1,
) -> None:
    """Check a stack end to end: an echo one-shot due in 10 s runs once and its result is its payload.

    The job (named tickwork-smoke-<token>, tagged tickwork-smoke) is cancelled afterwards, whatever happened.
    Exit status 0 when every step passed; 1 when one failed (the reason is printed), 3 on --timeout.
    """
    started = time.monotonic()
    check = Smoke(session.client, timeout, interval, clock.now, clock.sleep, lambda line: typer.echo(f"smoke: {line}"))
    try:
        check.run(SmokeJob.new(), clock.parse_at)
    except SmokeTimedOut as exc:
        typer.echo(f"FAIL: {exc}", err=True)
        raise typer.Exit(EXIT_TIMEOUT) from None
    except SmokeFailed as exc:
        typer.echo(f"FAIL: {exc}", err=True)
        raise typer.Exit(EXIT_SMOKE_FAILED) from None
    except ApiError as exc:
        typer.echo(f"FAIL: the API refused a call:\n{exc.describe()}", err=True)
        raise typer.Exit(EXIT_SMOKE_FAILED) from None
    typer.echo(f"PASS: {session.client.base_url} ran a job end to end in {time.monotonic() - started:.1f} s")
