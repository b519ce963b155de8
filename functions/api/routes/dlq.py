"""/v1/dlq: a tenant's FAILED runs, each saying whether it can be retried; re-queueing them, and dismissing one."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, CallerJobs, Tenant, Wired
from tickwork.control.api_bodies import DlqList, RedriveRequest, RedriveResult
from tickwork.control.api_examples import REDRIVE, openapi_examples
from tickwork.model.run import Run

from routes.parameters import Cursor, Limit, ReadTenant, RunId
from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()


PAGE_OF_RUNS = {200: ok(DlqList, "One page"), **problems(422)}
REDRIVEN = {202: ok(RedriveResult, "Re-queued"), **problems(400, 415, 422)}


@router.get(
    "/v1/dlq",
    summary="Your FAILED runs (an admin: a tenant's, or every tenant's), newest first",
    responses={**PAGE_OF_RUNS, **problems(403)},
    tags=["dlq"],
)
def list_dlq(mine: CallerJobs, limit: Limit = 50, cursor: Cursor = None, tenant: ReadTenant = None):
    return json_response(200, mine.reading(tenant).dlq_page(limit=limit, cursor=cursor))


@router.post(
    "/v1/dlq/redrive", summary="Re-queue all your FAILED runs, or the ones named", responses=REDRIVEN, tags=["dlq"]
)
def redrive(
    mine: CallerJobs,
    by: Acting,
    request: Annotated[
        RedriveRequest,
        Body(
            description='`{"all": true}` for every FAILED run, or `{"run_ids": [...]}`.',
            openapi_examples=openapi_examples(REDRIVE),
        ),
    ],
):
    return json_response(202, mine.redrive(request.named(), by))


@router.post(
    "/v1/dlq/<run_id>/dismiss",
    summary="Take a FAILED run out of the DLQ without a retry (its record is kept, and says who); idempotent",
    responses={200: ok(Run, "The run, FAILED, with dismissed_at and dismissed_by"), **problems(404, 409, 422)},
    tags=["dlq"],
)
def dismiss(run_id: RunId, built: Wired, tenant: Tenant, by: Acting):
    return json_response(200, built.redrive.dismiss(tenant, run_id, by=by))
