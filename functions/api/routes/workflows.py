"""/v1/workflows and /v1/workflow-runs: create, list, read, change, cancel, pause, resume and trigger a tenant's
workflows; list a workflow's runs; read, cancel and retry one workflow run. (A step's run is an ordinary run:
/v1/runs/{run_id} and its result.)"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, CallerWorkflows, Tenant, Wired, workflows_of
from tickwork.control.api_bodies import (
    WorkflowList,
    WorkflowRun,
    WorkflowRunCancel,
    WorkflowRunList,
    WorkflowSpec,
    WorkflowUpdate,
)
from tickwork.control.api_examples import WORKFLOW_RUN_CANCEL, WORKFLOW_SPEC, WORKFLOW_UPDATE, openapi_examples
from tickwork.model.states import JobState
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.model.workflow.definition import Workflow

from routes.by_id import add_routes
from routes.parameters import Cursor, Limit, ReadTenant, WorkflowId, WorkflowRunId
from routes.responses import WORKFLOW_OPERATIONS, json_response, linked, ok, problems

router = APIGatewayHttpRouter()


@router.post(
    "/v1/workflows",
    summary="Create a workflow: a schedule and a DAG of steps (docs/workflows.md)",
    responses={
        201: linked(ok(Workflow, "Created"), "workflow_id", WORKFLOW_OPERATIONS),
        **problems(400, 413, 415, 429),
    },
    tags=["workflows"],
)
def create_workflow(
    spec: Annotated[WorkflowSpec, Body(description="The workflow.", openapi_examples=openapi_examples(WORKFLOW_SPEC))],
    built: Wired,
    tenant: Tenant,
    by: Acting,
):
    return json_response(201, workflows_of(built).create(tenant, spec, by=by))


@router.get(
    "/v1/workflows",
    summary="List your workflows (an admin: a tenant's, or every tenant's), newest first",
    responses={200: ok(WorkflowList, "One page"), **problems(403, 422)},
    tags=["workflows"],
)
def list_workflows(
    mine: CallerWorkflows,
    tenant: ReadTenant = None,
    limit: Limit = 50,
    cursor: Cursor = None,
    state: Annotated[JobState | None, Query()] = None,
    name_prefix: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
):
    page = mine.reading(tenant).workflows_page(limit=limit, cursor=cursor, state=state, name_prefix=name_prefix)
    return json_response(200, page)


@router.patch(
    "/v1/workflows/<workflow_id>",
    summary="Change a workflow; runs in progress keep the definition they started with",
    responses={200: ok(Workflow, "The changed workflow"), **problems(400, 404, 409, 413, 415)},
    tags=["workflows"],
)
def update_workflow(
    workflow_id: WorkflowId,
    patch: Annotated[
        WorkflowUpdate, Body(description="The fields to change.", openapi_examples=openapi_examples(WORKFLOW_UPDATE))
    ],
    built: Wired,
    tenant: Tenant,
    by: Acting,
):
    return json_response(200, built.queries.shown(workflows_of(built).update(tenant, workflow_id, patch, by=by)))


@router.get(
    "/v1/workflows/<workflow_id>/runs",
    summary="Runs of a workflow, newest first",
    responses={200: ok(WorkflowRunList, "One page"), **problems(404, 422)},
    tags=["workflows"],
)
def list_workflow_runs(
    workflow_id: WorkflowId,
    mine: CallerWorkflows,
    limit: Limit = 50,
    cursor: Cursor = None,
    status: Annotated[WorkflowRunStatus | None, Query()] = None,
):
    return json_response(200, mine.runs_page(workflow_id, limit=limit, cursor=cursor, status=status))


add_routes(router, "workflows")  # one workflow or workflow run, and their state changes: see routes/by_id.py


@router.post(
    "/v1/workflow-runs/<workflow_run_id>/cancel",
    summary="Cancel a RUNNING workflow run: steps not started are SKIPPED `cancelled`, running ones are asked to stop; "
    'with `{"compensate": true}` the steps that SUCCEEDED are compensated',
    responses={200: ok(WorkflowRun, "The workflow run, CANCELLED or COMPENSATING"), **problems(400, 404, 409, 415)},
    tags=["workflows"],
)
def cancel_workflow_run(
    workflow_run_id: WorkflowRunId,
    built: Wired,
    tenant: Tenant,
    by: Acting,
    request: Annotated[
        WorkflowRunCancel | None,
        Body(description="Optional: whether to compensate.", openapi_examples=openapi_examples(WORKFLOW_RUN_CANCEL)),
    ] = None,
):
    compensate = request is not None and request.compensate
    return json_response(200, workflows_of(built).cancel_run(tenant, workflow_run_id, compensate=compensate, by=by))
