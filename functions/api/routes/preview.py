"""Previews (dry runs): a job's next occurrences, or a schedule's before it is a job's. Nothing is written."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Tenant, Wired
from tickwork.control.api_bodies import Preview, PreviewBlock, PreviewItem, SchedulePreviewRequest
from tickwork.control.api_examples import SCHEDULE_PREVIEW, openapi_examples
from tickwork.model.preview import DEFAULT_PREVIEW_COUNT, MAX_PREVIEW_COUNT, PreviewedOccurrence, preview, preview_job

from routes.parameters import JobId
from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()


def _answer(found: list[PreviewedOccurrence]) -> Preview:
    return Preview(items=[PreviewItem(at=o.at, local=o.local, dst=o.dst, blocked=_blocked(o)) for o in found])


def _blocked(found: PreviewedOccurrence) -> PreviewBlock | None:
    b = found.blocked
    return None if b is None else PreviewBlock(reason=b.reason.value, by=b.by, then=b.then, runs_at=b.runs_at)


@router.get(
    "/v1/jobs/<job_id>/preview",
    summary="The job's next occurrences, as it will run them, with DST flags",
    responses={
        200: ok(Preview, "The next occurrences after now; none for a CANCELLED or COMPLETED job"),
        **problems(404),
    },
    tags=["jobs"],
)
def preview_job_route(
    job_id: JobId,
    built: Wired,
    tenant: Tenant,
    count: Annotated[int, Query(ge=1, le=MAX_PREVIEW_COUNT, description="How many occurrences.")] = (
        DEFAULT_PREVIEW_COUNT
    ),
):
    job = built.queries.get_job(tenant, job_id)
    blockers = (*built.calendars.of_job(tenant, job.calendars), *built.freezes.over_job(job))
    return json_response(200, _answer(preview_job(job, after=built.clock.now(), count=count, blockers=blockers)))


@router.post(
    "/v1/schedules/preview",
    summary="A schedule's next occurrences, with DST flags, before it is a job's",
    responses={200: ok(Preview, "The next occurrences after `from`"), **problems(400, 415)},
    tags=["schedules"],
)
def preview_schedule_route(
    request: Annotated[
        SchedulePreviewRequest,
        Body(description="The schedule, count and from.", openapi_examples=openapi_examples(SCHEDULE_PREVIEW)),
    ],
    built: Wired,
    tenant: Tenant,
):
    after = request.from_ or built.clock.now()
    # A rate is anchored where a job created at `from` would be: it fires at from + k * period.
    found = preview(request.schedule.stored(), after=after, count=request.count, anchor=after)
    return json_response(200, _answer(found))
