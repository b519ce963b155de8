"""`tickwork workflows ...`: workflows (a schedule and a DAG of steps, docs/workflows.md): create, change, list,
read, pause, resume, cancel and trigger them. Their runs are `tickwork workflow-runs`'s (the module
workflow_runs); the old verbs for those (`workflows runs`, `get-run`, ...) still work here, unlisted.

    tickwork workflows create --file workflow.json
    tickwork workflows trigger <workflow id>
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tickwork_cli import clock, render
from tickwork_cli.bodies import given, policy_of, refuse_a_zone_for_a_rate, schedule_of
from tickwork_cli.client import ConfigError
from tickwork_cli.command_shapes import call_by_id, listing, request_body, whole_schedule
from tickwork_cli.commands.workflow_runs import (
    WORKFLOW_RUN_GET,
    WORKFLOW_RUN_ID,
    WORKFLOW_RUN_RETRY,
    workflow_runs_cancel,
    workflow_runs_list,
)
from tickwork_cli.options import (
    EXIT_STATUS_HELP,
    AllPages,
    BodyFile,
    CursorOpt,
    Limit,
    PolicyFields,
    ScheduleFields,
    Session,
    TenantOpt,
    WorkflowIdArg,
    WorkflowRunIdArg,
    api_command,
)

workflows_app = typer.Typer(
    help="Workflows (a schedule and a DAG of steps): create, list, trigger, and their runs.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(workflows_app, name="workflows")


WORKFLOW_BODY = "a workflow: name, schedule, steps, ..."


def _workflow_flags(name: str | None, schedule: ScheduleFields, policy: PolicyFields) -> dict[str, Any]:
    return {**given(name=name, schedule=schedule_of(schedule, clock.now()) or None), **policy_of(policy)}


@workflows_app.command("create")
@api_command
def workflows_create(
    *,
    file: Annotated[
        Path, typer.Option("--file", "-f", help="The workflow as JSON (name, schedule, steps, ...), or - for stdin.")
    ],
    session: Session,
    name: Annotated[str | None, typer.Option("--name", help="A name for people (overrides the file's).")] = None,
    schedule: ScheduleFields,
    policy: PolicyFields,
) -> None:
    """Create a workflow from its definition (see docs/workflows.md); the flags given override its fields."""
    spec = request_body(file, WORKFLOW_BODY, _workflow_flags(name, schedule, policy))
    refuse_a_zone_for_a_rate(schedule, spec.get("schedule"))
    session.show_one(session.client.create_workflow(spec))


@workflows_app.command("update")
@api_command
def workflows_update(
    workflow_id: WorkflowIdArg,
    session: Session,
    name: Annotated[str | None, typer.Option("--name", help="A new name.")] = None,
    *,
    schedule: ScheduleFields,
    policy: PolicyFields,
    file: BodyFile = None,
) -> None:
    """Change a workflow; runs in progress keep the definition they started with.

    New steps come by --file. --timezone alone keeps the workflow's cron.
    """
    change = request_body(file, "the fields to change", _workflow_flags(name, schedule, policy))
    if not change:
        raise ConfigError("nothing to change: give at least one option (see --help)")
    change = whole_schedule(lambda: session.client.get_workflow(workflow_id), schedule, change)
    session.show_one(session.client.update_workflow(workflow_id, change))


@workflows_app.command("list")
@api_command
def workflows_list(
    session: Session,
    state: Annotated[str | None, typer.Option("--state", help="ACTIVE, PAUSED, CANCELLED or COMPLETED.")] = None,
    name_prefix: Annotated[str | None, typer.Option("--name-prefix", help="Only names starting so.")] = None,
    tenant: TenantOpt = None,
    limit: Limit = None,
    cursor: CursorOpt = None,
    all_pages: AllPages = False,
) -> None:
    """Your workflows (an admin: a tenant's, with --tenant), newest first."""
    workflows = session.client.list_workflows(tenant=tenant, state=state, name_prefix=name_prefix, page_size=limit)
    session.show_page(listing(workflows, all_pages, cursor), render.WORKFLOW_COLUMNS, tenant=tenant)


call_by_id(workflows_app, "get", "One workflow.", "get_workflow", "workflow_id", WorkflowIdArg)
call_by_id(
    workflows_app,
    "pause",
    "Pause a workflow: its occurrences are skipped; runs in progress go on.",
    "pause_workflow",
    "workflow_id",
    WorkflowIdArg,
)
call_by_id(
    workflows_app,
    "resume",
    "Resume a paused workflow; missed occurrences follow the misfire rule.",
    "resume_workflow",
    "workflow_id",
    WorkflowIdArg,
)
call_by_id(
    workflows_app,
    "cancel",
    "Cancel a workflow: it has no new workflow runs.",
    "cancel_workflow",
    "workflow_id",
    WorkflowIdArg,
)
call_by_id(
    workflows_app,
    "trigger",
    "Run a workflow now, once, outside its schedule: its root steps are queued.",
    "trigger_workflow",
    "workflow_id",
    WorkflowIdArg,
)


# The old verbs, under workflows, kept for a release; not listed.
workflows_app.command("runs", hidden=True, epilog="With --wait: " + EXIT_STATUS_HELP)(workflow_runs_list)
workflows_app.command("cancel-run", hidden=True)(workflow_runs_cancel)
for _old, _doc, _call in (
    ("get-run", WORKFLOW_RUN_GET, "get_workflow_run"),
    ("show-run", WORKFLOW_RUN_GET, "get_workflow_run"),
    ("retry-run", WORKFLOW_RUN_RETRY, "retry_workflow_run"),
):
    call_by_id(workflows_app, _old, _doc, _call, WORKFLOW_RUN_ID, WorkflowRunIdArg, hidden=True)
