"""Runs: a job's runs, one run, its result, its logs, and retrying a FAILED one."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Depends
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, CallerJobs, Tenant, Who, Wired, WiringSlot, wiring
from tickwork.control.api_bodies import RetryRequest, RunList, RunLogs
from tickwork.control.api_examples import RETRY, openapi_examples
from tickwork.control.run_log_reader import InsightsLink, RunLogQueries, insights_link_of
from tickwork.control.stuck_runs import StuckRunList
from tickwork.model.run import Run
from tickwork.model.states import RunStatus

from routes.by_id import add_routes
from routes.parameters import Cursor, JobId, Limit, ReadTenant, RunId
from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()


@router.get(
    "/v1/jobs/<job_id>/runs",
    summary="Runs of a job, newest first",
    responses={200: ok(RunList, "One page"), **problems(404, 422)},
    tags=["runs"],
)
def list_runs(
    job_id: JobId,
    mine: CallerJobs,
    limit: Limit = 50,
    cursor: Cursor = None,
    status: Annotated[RunStatus | None, Query()] = None,
):
    return json_response(200, mine.runs_page(job_id, limit=limit, cursor=cursor, status=status))


@router.get(
    "/v1/runs/stuck",
    summary="Your stuck runs now: QUEUED over 5 minutes past their time, or RUNNING past their lease; oldest first",
    responses={200: ok(StuckRunList, "The stuck runs"), **problems(403, 422)},
    tags=["runs"],
)
def list_stuck_runs(built: Wired, who: Who, limit: Limit = 50, tenant: ReadTenant = None):
    return json_response(200, built.stuck_runs.list(who.tenant_to_read(tenant), limit=limit))


add_routes(router, "runs")  # one run, its result: see routes/by_id.py


RESUME = RetryRequest()  # a bodiless retry's: from the checkpoint


@router.post(
    "/v1/runs/<run_id>/retry",
    summary="Re-queue a FAILED run; attempts start again, from its last checkpoint unless from_checkpoint is false; "
    "with payload, it runs with that payload (checked by its job type, recorded as edited)",
    responses={202: ok(Run, "The run, QUEUED"), **problems(400, 404, 409, 415, 422)},
    tags=["runs"],
)
def retry_run(
    run_id: RunId,
    built: Wired,
    tenant: Tenant,
    by: Acting,
    request: Annotated[
        RetryRequest,
        Body(
            description='Optional: `{"from_checkpoint": false}` starts over; `{"payload": {...}}` re-runs it with '
            "that payload.",
            openapi_examples=openapi_examples(RETRY),
        ),
    ] = RESUME,
):
    payload = request.payload if "payload" in request.model_fields_set else None
    queued = built.redrive.retry_run(tenant, run_id, from_checkpoint=request.from_checkpoint, payload=payload, by=by)
    return json_response(202, queued)


def insights_link(slot: Annotated[WiringSlot, Depends(wiring)]) -> InsightsLink | None:
    return insights_link_of(slot.settings())


@router.get(
    "/v1/runs/<run_id>/logs",
    summary="What the run's handler logged (ctx.log), every attempt in order; empty until an attempt wrote some",
    responses={200: ok(RunLogs, "The run's logs"), **problems(404)},
    tags=["runs"],
)
def get_run_logs(
    run_id: RunId,
    built: Wired,
    who: Who,
    insights: Annotated[InsightsLink | None, Depends(insights_link)],
):
    view = RunLogQueries(built.queries, built.results, built.clock, insights).read(who.tenant, run_id, admin=who.admin)
    return json_response(200, RunLogs.model_validate(view, from_attributes=True))
