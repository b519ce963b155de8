"""Runs: a job's runs, one run, its result, and retrying a FAILED one."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import CallerJobs
from tickwork.api_models import RunList
from tickwork.models import RunStatus

from routes.by_id import add_routes
from routes.parameters import Cursor, JobId, Limit
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


add_routes(router, "runs")  # one run, its result, retrying it: see routes/by_id.py
