"""What the commands of several nouns (tickwork_cli.commands) are made of: one call about one thing named by its
id, a listing (a page, or every page), a wait on a page of runs until they finish, a bulk action page after page,
and a request body from --file and flags."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from tickwork_cli import clock, render
from tickwork_cli.api_client import Listing
from tickwork_cli.api_client.exchange import unseen
from tickwork_cli.bodies import SCHEDULE_KINDS, given, json_object_file, overlay, refuse_a_zone_for_a_rate
from tickwork_cli.options import (
    EXIT_TIMEOUT,
    RunsListing,
    ScheduleFields,
    Session,
    TenantOpt,
    api_command,
    exit_status_of,
)

EXIT_BULK_INCOMPLETE = 1  # a bulk action (`jobs pause --tag`, `runs retry --job`) found one it could not change
TERMINAL = {"SUCCEEDED", "FAILED", "SKIPPED"}
WORKFLOW_RUN_TERMINAL = TERMINAL | {"CANCELLED", "COMPENSATED", "COMPENSATION_FAILED"}


def listing(found: Listing[Any, Any], all_pages: bool, cursor: str | None = None) -> dict[str, Any]:
    """One page of a listing of the typed client's, from `cursor`; or (`all_pages`) every page from there, as one
    page without a next_cursor."""
    if all_pages:
        return {"items": render.plain(list(found.items(cursor))), "next_cursor": None}
    page: dict[str, Any] = render.plain(found.page(cursor))
    return page


def call_by_id(
    group: typer.Typer, name: str, doc: str, call: str, id_name: str, id_arg: Any, *, hidden: bool = False
) -> None:
    """A command that makes one call about one thing named by its id and shows the answer: `call` names the typed
    client's method, `id_name` (`job_id`, `run_id`, ...) the command's argument (its metavar in --help). A read
    (a `get_` method) takes --tenant too."""
    read = call.startswith("get_")

    def command(session: Session, tenant: str | None = None, **ids: str) -> None:
        method = getattr(session.client, call)
        session.show_one(method(ids[id_name], **given(tenant=tenant)))

    parameters = [
        inspect.Parameter(id_name, inspect.Parameter.KEYWORD_ONLY, annotation=id_arg),
        inspect.Parameter("session", inspect.Parameter.KEYWORD_ONLY, annotation=Session),
    ]
    if read:  # a read: an admin's, of a named tenant's (the item must be its), or any tenant's
        parameters.append(
            inspect.Parameter("tenant", inspect.Parameter.KEYWORD_ONLY, annotation=TenantOpt, default=None)
        )
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__doc__ = doc
    group.command(name, hidden=hidden)(api_command(command))


def watch(
    session: Session, runs: Listing[Any, Any], runs_listing: RunsListing, columns: Any, terminal: set[str]
) -> None:
    """Show a page of runs (a listing of the typed client's); with --wait, first poll until it lists runs and all
    of them are terminal, and exit with how they ended (options.EXIT_BY_ENDING)."""

    def fetch() -> dict[str, Any]:
        return listing(runs, runs_listing.all_pages, runs_listing.cursor)

    page = fetch()
    deadline = time.monotonic() + runs_listing.wait_timeout
    waited = 0.0
    said = ""
    while runs_listing.wait and not (page["items"] and all(r["status"] in terminal for r in page["items"])):
        if time.monotonic() >= deadline or waited >= runs_listing.wait_timeout:
            session.show_page(page, columns)
            typer.echo(f"tickwork: runs still unfinished after {runs_listing.wait_timeout:g} s", err=True)
            raise typer.Exit(EXIT_TIMEOUT)
        pending = sorted({r["status"] for r in page["items"] if r["status"] not in terminal}) or ["no runs yet"]
        news = f"waiting: {', '.join(pending)}"
        if news != said:  # say it once, and again when it changes
            typer.echo(news, err=True)
            said = news
        clock.sleep(runs_listing.interval)
        waited += runs_listing.interval
        page = fetch()
    session.show_page(page, columns)
    if runs_listing.wait:
        raise typer.Exit(exit_status_of(r["status"] for r in page["items"]))


def bulk(
    session: Session,
    send: Callable[[dict[str, Any]], Any],
    request: dict[str, Any],
    columns: list[tuple[str, Callable[[dict[str, Any]], Any]]],
) -> None:
    """A bulk action (`send`, the typed client's bulk_jobs or bulk_runs), page after page (each answer's next_cursor
    sent back as cursor): a line per item, and exit status 1 if one was not found or refused."""
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    unseen(request.get("cursor"), seen, "the bulk action")
    while True:
        answer = render.plain(send(request))
        items += answer["items"]
        if not unseen(answer["next_cursor"], seen, "the bulk action"):
            break
        request = {**request, "cursor": answer["next_cursor"]}
    session.show_page({"action": request["action"], "items": items, "next_cursor": None}, columns)
    if any(item["outcome"] in ("not_found", "refused") for item in items):
        raise typer.Exit(EXIT_BULK_INCOMPLETE)


def request_body(file: Path | None, what: str, flags: dict[str, Any]) -> dict[str, Any]:
    """The request body: the file's fields (if --file), the flags' laid over them."""
    return overlay(json_object_file(file, what) if file is not None else {}, flags)


def whole_schedule(stored_of: Callable[[], Any], flags: ScheduleFields, change: dict[str, Any]) -> dict[str, Any]:
    """An update's body with a whole schedule: when only the zone or the window changes, the kind (and the
    rest) comes from what the job or workflow has (`stored_of` reads it), since the API takes a schedule whole."""
    schedule = change.get("schedule")
    if schedule and not SCHEDULE_KINDS & set(schedule):
        stored = render.plain(stored_of())["schedule"]
        change = {**change, "schedule": {**{k: v for k, v in stored.items() if v is not None}, **schedule}}
    refuse_a_zone_for_a_rate(flags, change.get("schedule"))
    return change
