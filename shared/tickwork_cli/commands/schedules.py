"""`tickwork schedules preview`: a schedule's occurrences, with DST flags (gap, fold), before it is a job's or
a workflow's.

    tickwork schedules preview --cron "0 9 * * MON-FRI" --timezone Europe/Paris --count 10
"""

from __future__ import annotations

from typing import Annotated

import typer

from tickwork_cli import clock, render
from tickwork_cli.bodies import given, schedule_of
from tickwork_cli.options import PreviewCount, ScheduleFields, Session, api_command

schedules_app = typer.Typer(help="Schedules before they are jobs': preview their occurrences.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(schedules_app, name="schedules")


@schedules_app.command("preview")
@api_command
def schedules_preview(
    session: Session,
    *,
    schedule: ScheduleFields,
    count: PreviewCount = None,
    since: Annotated[
        str | None, typer.Option("--from", help="Occurrences after this time: ISO-8601, now, or +1d (default now).")
    ] = None,
) -> None:
    """A schedule's next occurrences, with DST flags (gap, fold), before it is a job's."""
    current = clock.now()
    since_at = clock.parse_at(since, current, "--from") if since is not None else None
    body = {"schedule": schedule_of(schedule, current), **given(count=count, **{"from": since_at})}
    page = render.plain(session.client.preview_schedule(body))
    session.show_page({**page, "next_cursor": None}, render.PREVIEW_COLUMNS)
