"""/v1/jobs/{id}/backfill: runs for a job's past occurrences, each once, dispatched at a bounded pace."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, Jobs, Tenant
from tickwork.control.api_bodies import BackfillRequest, BackfillResponse
from tickwork.control.api_examples import BACKFILL, openapi_examples

from routes.parameters import JobId
from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()


@router.post(
    "/v1/jobs/<job_id>/backfill",
    summary="Run the job's past occurrences in [from, to], each once (a repeat creates none it made)",
    responses={200: ok(BackfillResponse, "What was created, and what already existed"), **problems(400, 404, 409, 415)},
    tags=["jobs"],
)
def backfill_job(
    job_id: JobId,
    request: Annotated[
        BackfillRequest,
        Body(description="The range and the most runs to create.", openapi_examples=openapi_examples(BACKFILL)),
    ],
    jobs: Jobs,
    tenant: Tenant,
    by: Acting,
):
    done = jobs.backfill(tenant, job_id, request, by=by)
    body = BackfillResponse(created=len(done.created), runs=[r.id for r in done.created], existing=done.existing)
    return json_response(200, body)
