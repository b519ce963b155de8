"""Runs: a job's runs, one run, its result, its logs, and retrying a FAILED one."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler import Depends
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, CallerJobs, Tenant, Who, Wired, WiringSlot, wiring
from tickwork.control.api_bodies import RetryRequest, RunList, RunLogs
from tickwork.control.api_examples import BULK_RUNS, RETRY, openapi_examples
from tickwork.control.bulk_runs import MAX_BULK_RUNS, BulkRunsRequest, BulkRunsResult
from tickwork.control.run_log_reader import InsightsLink, RunLogQueries, insights_link_of
from tickwork.control.run_searches import RunSearchFilters
from tickwork.control.stuck_runs import StuckRunList
from tickwork.model.run import Run
from tickwork.model.schedule import CallerInstant
from tickwork.model.states import RunStatus, RunTrigger

from routes.by_id import add_routes
from routes.parameters import Cursor, JobId, Limit, ReadTenant, RunId, TagFilter, tag_pair
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
    started: Annotated[
        bool,
        Query(
            description="Only runs that have started at least once (not QUEUED ones to come; one re-queued by a "
            "retry or redrive has): `limit=1` is the job's last run."
        ),
    ] = False,
):
    page = mine.runs_page(job_id, limit=limit, cursor=cursor, status=status, started=started)
    return json_response(200, page)


@router.get(
    "/v1/runs",
    summary="Search your runs across every job and workflow, newest first",
    description="Filters combine (AND). `type` and `tag` select jobs (at most 100 may match; a workflow's steps "
    "by `workflow_id`). `from`/`to` bound `scheduled_for`, or the end (`on=ended_at`). Served by the runs index, "
    "never a Scan; a selective filter may return a short page with a cursor.",
    responses={200: ok(RunList, "One page"), **problems(403, 422)},
    tags=["runs"],
)
def search_runs(
    mine: CallerJobs,
    tenant: ReadTenant = None,
    limit: Limit = 50,
    cursor: Cursor = None,
    status: Annotated[RunStatus | None, Query()] = None,
    job_id: Annotated[str | None, Query(pattern=r"^j[0-9a-z]{25}$", description="Only this job's runs.")] = None,
    workflow_id: Annotated[
        str | None, Query(pattern=r"^w[0-9a-z]{25}$", description="Only this workflow's steps' runs.")
    ] = None,
    job_type: Annotated[
        str | None, Query(alias="type", max_length=64, description="Only runs of jobs of this type.")
    ] = None,
    tag: TagFilter = None,
    trigger: Annotated[RunTrigger | None, Query()] = None,
    error_type: Annotated[
        str | None, Query(max_length=256, description="Only runs whose last error is of this type.")
    ] = None,
    since: Annotated[CallerInstant | None, Query(alias="from", description="An instant with its offset.")] = None,
    until: Annotated[CallerInstant | None, Query(alias="to", description="An instant with its offset.")] = None,
    on: Annotated[
        Literal["scheduled_for", "ended_at"], Query(description="The instant `from` and `to` bound.")
    ] = "scheduled_for",
):
    filters = RunSearchFilters(
        status=status,
        job_id=job_id,
        workflow_id=workflow_id,
        job_type=job_type,
        tag=tag_pair(tag),
        trigger=trigger,
        error_type=error_type,
        since=since,
        until=until,
        on=on,
    )
    return json_response(200, mine.reading(tenant).search_page(filters, limit=limit, cursor=cursor))


@router.get(
    "/v1/runs/stuck",
    summary="Your stuck runs now: QUEUED over 5 minutes past their time, or RUNNING past their lease; oldest first",
    responses={200: ok(StuckRunList, "The stuck runs"), **problems(403, 422)},
    tags=["runs"],
)
def list_stuck_runs(built: Wired, who: Who, limit: Limit = 50, tenant: ReadTenant = None):
    return json_response(200, built.stuck_runs.list(who.tenant_to_read(tenant), limit=limit))


add_routes(router, "runs")  # one run, its result: see routes/by_id.py


@router.post(
    "/v1/bulk/runs",
    summary=f"Retry or redrive many FAILED runs: by ids or a runs search's filters; answered per run, at most "
    f"{MAX_BULK_RUNS} a request (then next_cursor)",
    responses={200: ok(BulkRunsResult, "What became of each run selected"), **problems(400, 415, 422)},
    tags=["runs"],
)
def bulk_runs(
    built: Wired,
    tenant: Tenant,
    by: Acting,
    request: Annotated[
        BulkRunsRequest,
        Body(
            description='`{"action": "retry", "filters": {"job_id": "j...", "from": "..."}}` or `{"action": '
            '"redrive", "run_ids": [...]}`; a run re-queued is not FAILED any more, so a repeat re-queues it not again.',
            openapi_examples=openapi_examples(BULK_RUNS),
        ),
    ],
):
    return json_response(200, built.bulk_runs.apply(tenant, request, by=by))


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
