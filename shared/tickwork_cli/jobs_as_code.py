"""`tickwork plan` and `tickwork apply`: jobs, workflows and calendars defined in files, made so over the HTTP API
(docs/jobs-as-code.md). The files are read by tickwork_cli.definition_files, the plan made by
tickwork_cli.desired_state; here the API is read and, for `apply`, called.

    tickwork plan -f jobs/ --source payments          # exit 0: nothing to do, 2: changes, 1: an error
    tickwork apply -f jobs/ --source payments --prune
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from tickwork_cli.client import ApiError, Client, ConfigError
from tickwork_cli.definition_files import read_definitions
from tickwork_cli.desired_state import (
    MANAGED_BY,
    Action,
    DefinitionError,
    Plan,
    managed_by,
    plan,
    with_calendar_ids,
)
from tickwork_cli.options import Session, api_command

EXIT_NO_CHANGES = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2  # as `terraform plan -detailed-exitcode`
DONE = {"create": "created", "change": "changed", "cancel": "cancelled"}
PATHS = {"calendar": "/v1/calendars", "job": "/v1/jobs", "workflow": "/v1/workflows"}

DefinitionsPath = Annotated[
    Path,
    typer.Option(
        "--file", "-f", help="A definitions file (YAML or JSON), or a folder of them, read whole.", show_default=False
    ),
]
SourceOpt = Annotated[
    str,
    typer.Option(
        "--source",
        help=f"Whose objects these are: the label `{MANAGED_BY}: <source>` on each job and workflow. Only objects of "
        "this source are changed or cancelled.",
    ),
]
PruneOpt = Annotated[
    bool, typer.Option("--prune", help="Cancel the jobs and workflows of this source that the files no longer define.")
]


def live_state(client: Client, source: str) -> dict[str, list[dict[str, Any]]]:
    """The tenant's calendars, and its jobs and workflows managed by `source`, none CANCELLED."""

    def managed(items: Any) -> list[dict[str, Any]]:
        return [i for i in items if managed_by(i, source) and i.get("state") != "CANCELLED"]

    return {
        "calendar": client.get(PATHS["calendar"])["items"],
        "job": managed(client.pages(PATHS["job"], tag=f"{MANAGED_BY}={source}")),
        "workflow": managed(client.pages(PATHS["workflow"])),
    }


def describe(made: Plan) -> list[str]:
    """The plan as a person reads it: `+` create, `~` change (each field: live -> file), `-` cancel."""
    lines = []
    for action in made.actions:
        if action.kind == "create":
            lines.append(f"+ {action.object_kind} {action.name}")
        elif action.kind == "change":
            lines.append(f"~ {action.object_kind} {action.name} ({action.live_id})")
            lines += [f"    {d.path}: {_shown(d.live)} -> {_shown(d.desired)}" for d in action.differences]
        else:
            lines.append(f"- {action.object_kind} {action.name} ({action.live_id}): cancel")
    counts = ", ".join(f"{made.count(kind)} to {kind}" for kind in ("create", "change", "cancel"))
    lines.append(f"Plan: {counts}." if made.changes_anything else "No changes: the API matches the files.")
    return lines


def _shown(value: Any) -> str:
    return "(absent)" if value is None else json.dumps(value, sort_keys=True)


def _made(client: Client, path: Path, source: str, prune: bool) -> tuple[Plan, dict[str, str]]:
    definitions = read_definitions(path)
    live = live_state(client, source)
    return plan(definitions, live, source, prune=prune), {c["name"]: c["id"] for c in live["calendar"]}


def carry_out(client: Client, made: Plan, calendar_ids: dict[str, str], say: Callable[[str], None]) -> None:
    """Each action in the plan's order; a calendar created gives its id to the jobs that name it after it."""
    for action in made.actions:
        try:
            _carry_out_one(client, action, calendar_ids)
        except ApiError as exc:
            raise _located(action, exc) from None
        say(f"{DONE[action.kind]} {action.object_kind} {action.name}")


def _carry_out_one(client: Client, action: Action, calendar_ids: dict[str, str]) -> None:
    base = PATHS[action.object_kind]
    if action.kind == "cancel":
        client.delete(f"{base}/{action.live_id}")
        return
    body = with_calendar_ids(action.body, calendar_ids)
    if action.kind == "create":
        created = client.post(base, body)
        if action.object_kind == "calendar":
            calendar_ids[action.name] = created["id"]
    elif action.object_kind == "calendar":
        client.put(f"{base}/{action.live_id}", body)
    else:
        client.patch(f"{base}/{action.live_id}", body)


def _located(action: Action, exc: ApiError) -> DefinitionError:
    """The API's refusal, each field it names at its line in the file."""
    where = action.definition.where if action.definition else f"{action.object_kind} {action.name}"
    errors = exc.problem.get("errors") or []
    if not errors or action.definition is None:
        return DefinitionError(where, exc.describe())
    return DefinitionError(
        where,
        f"{action.object_kind} {action.name!r} refused ({exc.status}):\n"
        + "\n".join(
            f"  {action.definition.where_is(str(e.get('field', '')))}: {e.get('field')}: {e.get('message')}"
            for e in errors
        ),
    )


def _failed(message: str) -> typer.Exit:
    typer.echo(f"tickwork: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def plan_command(
    file: DefinitionsPath, session: Session, source: SourceOpt = "default", prune: PruneOpt = False
) -> None:
    """What `apply` would do: create (+), change (~, each field live -> file) and, with --prune, cancel (-).
    Exit status: 0 nothing to do, 2 changes, 1 an error."""
    try:
        made, _ = _made(session.client, file, source, prune)
    except (DefinitionError, ConfigError) as exc:
        raise _failed(str(exc)) from None
    typer.echo("\n".join(describe(made)))
    raise typer.Exit(EXIT_CHANGES if made.changes_anything else EXIT_NO_CHANGES)


def apply_command(
    file: DefinitionsPath, session: Session, source: SourceOpt = "default", prune: PruneOpt = False
) -> None:
    """Make the API what the files say, in order (calendars before the jobs and workflows that name them); the
    same files again change nothing. Exit status: 0 done, 1 an error (what was done before it is said)."""
    try:
        made, calendar_ids = _made(session.client, file, source, prune)
        typer.echo("\n".join(describe(made)))
        carry_out(session.client, made, calendar_ids, typer.echo)
    except (DefinitionError, ConfigError) as exc:
        raise _failed(str(exc)) from None


def register(app: typer.Typer) -> None:
    app.command("plan")(api_command(plan_command))
    app.command("apply")(api_command(apply_command))
