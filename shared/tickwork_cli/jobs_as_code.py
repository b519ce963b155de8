"""`tickwork plan` and `tickwork apply`: jobs, workflows, calendars and freezes defined in files, made so over the
HTTP API (docs/jobs-as-code.md). The files are read by tickwork_cli.definition_files, the plan made by
tickwork_cli.desired_state; here the API is read and, for `apply`, called.

    tickwork plan -f jobs/ --source payments          # exit 0: nothing to do, 2: changes, 1: an error
    tickwork apply -f jobs/ --source payments --prune
    tickwork apply -f jobs/ --source payments --adopt  # take over the hand-made jobs of the files' names
    tickwork apply --from-module acme_jobs --source acme  # the jobs its @job_type(schedule=...) declare
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from tickwork.model.freezes import EVERY_TENANT

from tickwork_cli import clock, render
from tickwork_cli.api_client import ApiError, Client, ConfigError
from tickwork_cli.declared_jobs import read_modules
from tickwork_cli.definition_files import read_definitions
from tickwork_cli.desired_state import (
    MANAGED_BY,
    Action,
    ActionKind,
    Definition,
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
DONE = {"create": "created", "adopt": "adopted", "change": "changed", "replace": "replaced", "cancel": "cancelled"}
DefinitionsPath = Annotated[
    Path | None,
    typer.Option(
        "--file", "-f", help="A definitions file (YAML or JSON), or a folder of them, read whole.", show_default=False
    ),
]
FromModuleOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--from-module",
        metavar="MODULE",
        help="A Python module (repeatable) whose @job_type(..., schedule= or jobs=) declare the jobs that run its "
        "handlers: those jobs are definitions too, beside the files'.",
        show_default=False,
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
    bool,
    typer.Option(
        "--prune",
        help="Cancel the jobs and workflows, and lift the freezes, of this source that the files no longer define.",
    ),
]
AdoptOpt = Annotated[
    bool,
    typer.Option(
        "--adopt",
        help="A job or workflow made by hand whose name the files define becomes this source's (tagged, its fields "
        "made the file's), instead of a conflict that stops apply.",
    ),
]


def live_state(
    client: Client, source: str, definitions: list[Definition], *, prune: bool
) -> dict[str, list[dict[str, Any]]]:
    """The tenant's calendars and workflows, and its jobs managed by `source`, none CANCELLED; when a job the files
    define is not among those, every job of the tenant, to find one of its name another made; and when the files
    define freezes or prune, the caller's own freezes (an admin lists every tenant's: another's is never touched)."""

    def standing(items: Any) -> list[dict[str, Any]]:
        return [i for i in render.plain(list(items)) if i.get("state") != "CANCELLED"]

    jobs = [j for j in standing(client.list_jobs(tag=f"{MANAGED_BY}={source}")) if managed_by(j, source)]
    if {d.name for d in definitions if d.kind == "job"} - {j["name"] for j in jobs}:
        jobs = standing(client.list_jobs())
    return {
        "calendar": render.plain(client.list_calendars()),
        "job": jobs,
        "workflow": standing(client.list_workflows()),
        "freeze": _own_freezes(client) if prune or any(d.kind == "freeze" for d in definitions) else [],
    }


def _own_freezes(client: Client) -> list[dict[str, Any]]:
    me = client.me()
    own = (me.tenant, EVERY_TENANT) if me.admin else (me.tenant,)
    return [f for f in render.plain(client.list_freezes()) if f.get("tenant") in own]


def describe(made: Plan) -> list[str]:
    """The plan as a person reads it: `+` create, `~` change or adopt (each field: live -> file), `-/+` replace (a
    freeze), `-` cancel (a freeze: lift), `!` a conflict (a name another's object has). Adoptions and replacements
    are counted only when there are some."""
    lines = []
    for action in made.actions:
        if action.kind == "create":
            lines.append(f"+ {action.object_kind} {action.name}")
        elif action.kind in ("change", "adopt"):
            adopted = ": adopt (made by hand)" if action.kind == "adopt" else ""
            lines.append(f"~ {action.object_kind} {action.name} ({action.live_id}){adopted}")
            lines += [f"    {d.path}: {_shown(d.live)} -> {_shown(d.desired)}" for d in action.differences]
        elif action.kind == "replace":
            lines.append(f"-/+ {action.object_kind} {action.name} ({action.live_id}): replace (lifted, made anew)")
            lines += [f"    {d.path}: {_shown(d.live)} -> {_shown(d.desired)}" for d in action.differences]
        else:
            lines.append(f"- {action.object_kind} {action.name} ({action.live_id}): {_cancel(action)}")
    lines += [f"! {c.object_kind} {c.name}: {c.reason}" for c in made.conflicts]
    kinds: tuple[ActionKind, ...] = ("create", "adopt", "change", "replace", "cancel")
    kinds = tuple(k for k in kinds if made.count(k) or k not in ("adopt", "replace"))
    counts = ", ".join(f"{made.count(kind)} to {kind}" for kind in kinds)
    if made.changes_anything or made.conflicts:
        lines.append(f"Plan: {counts}." + (f" {len(made.conflicts)} in conflict." if made.conflicts else ""))
    else:
        lines.append("No changes: the API matches the files.")
    return lines


def _cancel(action: Action) -> str:
    return "lift" if action.object_kind == "freeze" else "cancel"


def _shown(value: Any) -> str:
    return "(absent)" if value is None else json.dumps(value, sort_keys=True)


def definitions_from(path: Path | None, modules: list[str] | None) -> list[Definition]:
    """The files' definitions, then the modules' declared jobs; one of the two must be given."""
    if path is None and not modules:
        raise DefinitionError("tickwork", "give the definitions: -f PATH, --from-module MODULE, or both")
    return (read_definitions(path) if path is not None else []) + read_modules(modules or [])


def _made(
    client: Client, definitions: list[Definition], source: str, prune: bool, adopt: bool
) -> tuple[Plan, dict[str, str]]:
    """The plan, printed; a conflict in it an error (nothing is done while one stands)."""
    live = live_state(client, source, definitions, prune=prune)
    made = plan(definitions, live, source, now=clock.now(), prune=prune, adopt=adopt)
    typer.echo("\n".join(describe(made)))
    if made.conflicts:
        first = made.conflicts[0]
        raise DefinitionError(
            first.definition.where,
            f"{', '.join(repr(c.name) for c in made.conflicts)}: already the name of a job or workflow this source "
            "does not manage (!); apply makes no second one of a name",
        )
    return made, {c["name"]: c["id"] for c in live["calendar"]}


def carry_out(client: Client, made: Plan, calendar_ids: dict[str, str], say: Callable[[str], None]) -> None:
    """Each action in the plan's order; a calendar created gives its id to the jobs that name it after it."""
    for action in made.actions:
        try:
            _carry_out_one(client, action, calendar_ids)
        except ApiError as exc:
            raise _located(action, exc) from None
        done = "lifted" if action.kind == "cancel" and _cancel(action) == "lift" else DONE[action.kind]
        say(f"{done} {action.object_kind} {action.name}")


def _carry_out_one(client: Client, action: Action, calendar_ids: dict[str, str]) -> None:
    kind, live_id = action.object_kind, str(action.live_id)
    creates: dict[str, Callable[[Any], Any]] = {
        "calendar": client.create_calendar,
        "job": client.create_job,
        "workflow": client.create_workflow,
        "freeze": client.create_freeze,
    }
    cancels: dict[str, Callable[[str], Any]] = {
        "calendar": client.delete_calendar,
        "job": client.cancel_job,
        "workflow": client.cancel_workflow,
        "freeze": client.lift_freeze,
    }
    if action.kind == "cancel":
        cancels[kind](live_id)
        return
    body = with_calendar_ids(action.body, calendar_ids)
    if action.kind == "replace":  # the new one first: no moment unfrozen between the two
        creates[kind](body)
        cancels[kind](live_id)
    elif action.kind == "create":
        created = creates[kind](body)
        if kind == "calendar":
            calendar_ids[action.name] = created.id
    elif kind == "calendar":
        client.replace_calendar(live_id, body)
    elif kind == "job":
        client.update_job(live_id, body)
    else:
        client.update_workflow(live_id, body)


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
    session: Session,
    file: DefinitionsPath = None,
    from_module: FromModuleOpt = None,
    source: SourceOpt = "default",
    prune: PruneOpt = False,
    adopt: AdoptOpt = False,
) -> None:
    """What `apply` would do: create (+), change (~, each field live -> file), with --adopt take over (~ adopt) and,
    with --prune, cancel (-); a name another's object has is a conflict (!). Exit status: 0 nothing to do, 2
    changes, 1 an error or a conflict."""
    try:
        made, _ = _made(session.client, definitions_from(file, from_module), source, prune, adopt)
    except (DefinitionError, ConfigError) as exc:
        raise _failed(str(exc)) from None
    raise typer.Exit(EXIT_CHANGES if made.changes_anything else EXIT_NO_CHANGES)


def apply_command(
    session: Session,
    file: DefinitionsPath = None,
    from_module: FromModuleOpt = None,
    source: SourceOpt = "default",
    prune: PruneOpt = False,
    adopt: AdoptOpt = False,
) -> None:
    """Make the API what the files say, in order (calendars before the jobs and workflows that name them); the
    same files again change nothing; a conflict (a name another's object has) refuses it all. Exit status: 0 done,
    1 an error (what was done before it is said)."""
    try:
        made, calendar_ids = _made(session.client, definitions_from(file, from_module), source, prune, adopt)
        carry_out(session.client, made, calendar_ids, typer.echo)
    except (DefinitionError, ConfigError) as exc:
        raise _failed(str(exc)) from None


def register(app: typer.Typer) -> None:
    app.command("plan")(api_command(plan_command))
    app.command("apply")(api_command(apply_command))
