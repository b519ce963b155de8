"""/v1/jobs: create, list, read, change, cancel, pause, resume and trigger a tenant's jobs."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Request
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, CallerJobs, Jobs, Tenant, Wired
from tickwork.control.api_bodies import JobList, JobSpec, JobUpdate, TriggeredRun, TriggerRequest
from tickwork.control.api_examples import BATCH_CREATE, BULK_JOBS, JOB_SPEC, JOB_UPDATE, TRIGGER, openapi_examples
from tickwork.control.batch_create import (
    BATCH_IDEMPOTENCY_KEY,
    MAX_BATCH_JOBS,
    BatchCreateRequest,
    BatchCreateResult,
)
from tickwork.control.bulk_jobs import MAX_BULK_JOBS, BulkJobsRequest, BulkJobsResult
from tickwork.control.idempotent_create import request_hash
from tickwork.model.job import Job
from tickwork.model.states import JobState
from tickwork.store import IDEMPOTENCY_KEY

from routes.by_id import add_routes
from routes.parameters import Cursor, JobId, Limit, ReadTenant, TagFilter, tag_pair
from routes.responses import JOB_OPERATIONS, RUN_OPERATIONS, json_response, linked, ok, problems

router = APIGatewayHttpRouter()


@router.post(
    "/v1/jobs",
    summary="Create a job",
    responses={
        201: linked(ok(Job, "Created (or replayed for the same Idempotency-Key and body)"), "job_id", JOB_OPERATIONS),
        **problems(400, 409, 413, 415, 429),
    },
    tags=["jobs"],
)
def create_job(
    spec: Annotated[JobSpec, Body(description="The job.", openapi_examples=openapi_examples(JOB_SPEC))],
    request: Request,
    jobs: Jobs,
    mine: CallerJobs,
    by: Acting,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            pattern=IDEMPOTENCY_KEY.pattern,
            description="The same key and body within 24 h return the first response; another body is a 409.",
        ),
    ] = None,
):
    if idempotency_key is None:
        return json_response(201, jobs.create_job(mine.tenant, spec, by=by))
    body, replayed = mine.create_once(spec, idempotency_key, request_hash(request.json_body), by)
    return json_response(201, body, {"Idempotent-Replayed": "true" if replayed else "false"})


@router.get(
    "/v1/jobs",
    summary="List your jobs (an admin: a tenant's, or every tenant's), newest first",
    responses={200: ok(JobList, "One page"), **problems(403, 422)},
    tags=["jobs"],
)
def list_jobs(
    mine: CallerJobs,
    tenant: ReadTenant = None,
    limit: Limit = 50,
    cursor: Cursor = None,
    state: Annotated[JobState | None, Query()] = None,
    job_type: Annotated[str | None, Query(alias="type", max_length=64)] = None,
    name_prefix: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    tag: TagFilter = None,
):
    page = mine.reading(tenant).jobs_page(
        limit=limit, cursor=cursor, state=state, job_type=job_type, name_prefix=name_prefix, tag=tag_pair(tag)
    )
    return json_response(200, page)


@router.patch(
    "/v1/jobs/<job_id>",
    summary="Change a job; a new schedule recomputes the next occurrence",
    responses={200: ok(Job, "The changed job"), **problems(400, 404, 409, 413, 415)},
    tags=["jobs"],
)
def update_job(
    job_id: JobId,
    patch: Annotated[
        JobUpdate, Body(description="The fields to change.", openapi_examples=openapi_examples(JOB_UPDATE))
    ],
    jobs: Jobs,
    built: Wired,
    tenant: Tenant,
    by: Acting,
):
    return json_response(200, built.queries.shown(jobs.update(tenant, job_id, patch, by=by)))


NO_TRIGGER_REQUEST = TriggerRequest()


@router.post(
    "/v1/jobs/<job_id>/trigger",
    summary="Run a job now, once, outside its schedule; or, debounced, in the run at the end of its key's window",
    responses={
        202: linked(
            ok(TriggeredRun, "The run, QUEUED (debounced: whether it started its window or joined it)"),
            "run_id",
            RUN_OPERATIONS,
        ),
        **problems(400, 404, 409, 413, 415),
    },
    tags=["jobs"],
)
def trigger_job(
    job_id: JobId,
    jobs: Jobs,
    tenant: Tenant,
    by: Acting,
    # Optional, and never null: no body is the empty request (the job's payload, its own debounce if any).
    request: Annotated[
        TriggerRequest,
        Body(
            description="Optional: the run's own payload, and a debounce.", openapi_examples=openapi_examples(TRIGGER)
        ),
    ] = (NO_TRIGGER_REQUEST),
):
    return json_response(202, jobs.trigger(tenant, job_id, request, by=by))


@router.post(
    "/v1/bulk/jobs",
    summary=f"Pause, resume or cancel many jobs: by tags, ids or all; answered per job, at most {MAX_BULK_JOBS} a "
    "request (then next_cursor)",
    responses={200: ok(BulkJobsResult, "What became of each job selected"), **problems(400, 415, 422)},
    tags=["jobs"],
)
def bulk_jobs(
    built: Wired,
    tenant: Tenant,
    by: Acting,
    request: Annotated[
        BulkJobsRequest,
        Body(
            description='`{"action": "pause", "selector": {"tags": {"team": "data"}}}`; idempotent.',
            openapi_examples=openapi_examples(BULK_JOBS),
        ),
    ],
):
    return json_response(200, built.bulk_jobs.apply(tenant, request, by=by))


@router.post(
    "/v1/bulk/jobs/create",
    summary=f"Create up to {MAX_BATCH_JOBS} jobs, each as POST /v1/jobs would, answered per job",
    responses={200: ok(BatchCreateResult, "Each job's outcome, in order"), **problems(400, 413, 415, 422)},
    tags=["jobs"],
)
def create_jobs_in_batch(
    request: Annotated[
        BatchCreateRequest,
        Body(
            description=f'`{{"jobs": [<a job, as POST /v1/jobs takes it>, ...]}}`: 1 to {MAX_BATCH_JOBS} of them.',
            openapi_examples=openapi_examples(BATCH_CREATE),
        ),
    ],
    built: Wired,
    tenant: Tenant,
    by: Acting,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            pattern=BATCH_IDEMPOTENCY_KEY,
            description="Job i is created under the key `<key>#<i>` (never a single create's): a retry within 24 h "
            "answers each job as the first try did, and creates only those it did not.",
        ),
    ] = None,
):
    return json_response(200, built.batch_create.create(tenant, request, key=idempotency_key, by=by))


add_routes(router, "jobs")  # one job, and its state changes: see routes/by_id.py
