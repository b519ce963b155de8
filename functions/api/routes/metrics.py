"""Metrics: time series of the scheduler's figures (CloudWatch GetMetricData), and their catalogue.

Deployed, the figures are the functions' EMF metrics and AWS's own (SQS, Lambda); locally, the same metrics
forwarded into the local endpoint's CloudWatch (tickwork_local.aws.emf_forwarding): one code path for both.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Depends
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from dependencies import Wired, caller
from tickwork.control.callers import Caller
from tickwork.control.metrics_bodies import Catalogue, MetricsBody
from tickwork.control.metrics_catalogue import (
    CATALOGUE,
    MAX_PERIOD_SECONDS,
    MIN_PERIOD_SECONDS,
    assemble,
    for_caller,
    metrics_request,
    plan,
)
from tickwork.model.freezes import EVERY_TENANT
from tickwork.model.policies import Band
from tickwork.model.schedule import CallerInstant

from routes.parameters import ReadTenant
from routes.responses import json_response, ok, problems

router = APIGatewayHttpRouter()

Who = Annotated[Caller, Depends(caller)]

# The document says which names exist (a comma-separated list of catalogue names, nothing else).
_NAME = "|".join(CATALOGUE)
NAMES_PATTERN = rf"^({_NAME})(,({_NAME}))*$"


@router.get(
    "/v1/metrics",
    summary="Time series of the scheduler's figures (start lateness, outcomes, retries, queue lag, utilisation)",
    responses={200: ok(MetricsBody, "Each series on the whole grid, null where there is no data"), **problems()},
    tags=["metrics"],
)
def get_metrics(
    built: Wired,
    who: Who,
    names: Annotated[
        str | None,
        Query(
            max_length=1000,
            pattern=NAMES_PATTERN,
            description="Comma-separated catalogue names (`GET /v1/metrics/catalogue`); absent: all.",
        ),
    ] = None,
    period: Annotated[
        int,
        Query(
            ge=MIN_PERIOD_SECONDS,
            le=MAX_PERIOD_SECONDS,
            multiple_of=60,
            description="Seconds per point: 60 to 3600, a multiple of 60.",
        ),
    ] = 60,
    start: Annotated[
        CallerInstant | None, Query(description="An instant with its offset; default `end` - 1 h.")
    ] = None,
    end: Annotated[
        CallerInstant | None, Query(description="An instant with its offset; default now. At most 24 h after start.")
    ] = None,
    band: Annotated[Band | None, Query(description="Only this band's series, for figures by band.")] = None,
    tenant: ReadTenant = None,
):
    if tenant == EVERY_TENANT:
        who.tenant_to_read(tenant)  # a tenant's `*` is refused, as on every read
        tenant = None  # every tenant's: the figures' totals, as with none named
    request = metrics_request(
        names=names, period=period, start=start, end=end, now=built.clock.now(), band=band, tenant=tenant
    )
    request = for_caller(request, tenant=who.tenant, admin=who.admin, names_given=names is not None)
    built_plan = plan(request, built.metrics_context)
    results = built.metric_series.read(built_plan.queries, request.start, request.end)
    return json_response(200, MetricsBody.of(request, assemble(request, built_plan, results)))


@router.get(
    "/v1/metrics/catalogue",
    summary="The figures `GET /v1/metrics` serves: names, labels, units and breakdowns",
    responses={200: ok(Catalogue, "Every catalogue name"), **problems()},
    tags=["metrics"],
)
def get_catalogue(who: Who):
    return json_response(200, Catalogue.of_all())
