"""/v1/jobs/{id}/variants: a job's variants' stats over a window, and a variant promoted or rolled back."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import unquote

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Acting, Tenant, Wired
from pydantic import BeforeValidator
from tickwork.control.api_bodies import JobVariantsView
from tickwork.control.job_variants import DEFAULT_WINDOW
from tickwork.model.job import Job

from routes.parameters import JobId
from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()

# Decoded before its length is checked, as a job id is (routes.parameters).
VariantName = Annotated[
    str, BeforeValidator(unquote), Path(description="A variant's name, as the job declares it.", max_length=32)
]


@router.get(
    "/v1/jobs/<job_id>/variants",
    summary="The job's baseline and variants: success rate, duration p50/p95, attempts and cost per run, in a window",
    responses={200: ok(JobVariantsView, "Each variant's runs that ended in the window"), **problems(400, 404)},
    tags=["jobs"],
)
def job_variants(
    job_id: JobId,
    built: Wired,
    tenant: Tenant,
    window: Annotated[
        str,
        Query(
            pattern=r"^[0-9]{1,5}[mhd]$",
            description="How far back from now: 30m, 24h, 7d (up to 30d); default 24h.",
        ),
    ] = DEFAULT_WINDOW,
):
    return json_response(200, built.job_variants.stats(tenant, job_id, window))


def _variant_change(action: str, summary: str, answer: str) -> None:
    """POST /v1/jobs/{id}/variants/{name}/<action>: a change of the job (tickwork.control.job_variants)."""

    @router.post(
        f"/v1/jobs/<job_id>/variants/<name>/{action}",
        summary=summary,
        responses={200: ok(Job, answer), **problems(404, 409)},
        tags=["jobs"],
    )
    def change(job_id: JobId, name: VariantName, built: Wired, tenant: Tenant, by: Acting):
        return json_response(200, getattr(built.job_variants, action)(tenant, job_id, name, by=by))


_variant_change(
    "promote",
    "Make a variant the job's own: its type and payload become the job's, and the variant goes",
    "The job as changed",
)
_variant_change(
    "rollback",
    "Remove a variant: its share of the runs goes back to the baseline",
    "The job as changed, with the rollback recorded",
)
