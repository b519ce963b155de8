"""`tickwork workflow-runs ...`: runs of workflows: list a workflow's (and wait for them), read one, cancel it
(compensating what succeeded, if asked), retry its failed steps. A step's run is a run: `tickwork runs`.

    tickwork workflow-runs list <workflow id> --wait
"""

from __future__ import annotations

from typing import Annotated

import typer

from tickwork_cli import render
from tickwork_cli.command_shapes import WORKFLOW_RUN_TERMINAL, call_by_id, watch
from tickwork_cli.options import (
    EXIT_STATUS_HELP,
    RunsListing,
    Session,
    WorkflowIdArg,
    WorkflowRunIdArg,
    api_command,
)

workflow_runs_app = typer.Typer(
    help="Runs of workflows: list, inspect, cancel, retry (a step's run is a run: `tickwork runs`).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(workflow_runs_app, name="workflow-runs")


@workflow_runs_app.command("list", epilog="With --wait: " + EXIT_STATUS_HELP)
@api_command
def workflow_runs_list(
    workflow_id: WorkflowIdArg,
    session: Session,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="RUNNING, SUCCEEDED, FAILED, SKIPPED, CANCELLED, COMPENSATING, COMPENSATED or COMPENSATION_FAILED.",
        ),
    ] = None,
    *,
    listing: RunsListing,
) -> None:
    """Runs of a workflow, newest first, with each step's state."""
    runs = session.client.list_workflow_runs(workflow_id, status=status, page_size=listing.limit)
    watch(session, runs, listing, render.WORKFLOW_RUN_COLUMNS, WORKFLOW_RUN_TERMINAL)


WORKFLOW_RUN_ID = "workflow_run_id"
WORKFLOW_RUN_GET = "One workflow run, with every step's state and run id (`tickwork runs get` shows a step's run)."
call_by_id(workflow_runs_app, "get", WORKFLOW_RUN_GET, "get_workflow_run", WORKFLOW_RUN_ID, WorkflowRunIdArg)


@workflow_runs_app.command("cancel")
@api_command
def workflow_runs_cancel(
    workflow_run_id: WorkflowRunIdArg,
    session: Session,
    compensate: Annotated[
        bool, typer.Option("--compensate", help="Compensate the steps that succeeded (docs/workflows.md).")
    ] = False,
) -> None:
    """Cancel a RUNNING workflow run: steps not started are skipped, running ones asked to stop."""
    body = {"compensate": True} if compensate else None
    session.show_one(session.client.cancel_workflow_run(workflow_run_id, body))


WORKFLOW_RUN_RETRY = (
    "Re-run a FAILED workflow run's failed steps and what they skipped; nothing that succeeded runs again."
)
call_by_id(workflow_runs_app, "retry", WORKFLOW_RUN_RETRY, "retry_workflow_run", WORKFLOW_RUN_ID, WorkflowRunIdArg)
