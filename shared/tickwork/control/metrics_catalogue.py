"""The figures `GET /v1/metrics` serves, and the CloudWatch queries behind each: pure, no client.

Each catalogue name maps to one or more series (a total, one per band, or one for a tenant); each series to the
MetricDataQueries that give it: a MetricStat over an EMF metric of Tickwork's namespace (dimension `service`,
plus `band` or `tenant` where those are emitted, see tickwork.executor.run_metrics), over AWS/SQS's metrics of a band
queue, or AWS/Lambda's of the executor; or a metric math expression over hidden ones (failure_rate,
runs_deferred's total, executor_utilisation). `plan` builds every query of one request (at most
MAX_QUERIES, one GetMetricData call paged by NextToken); `assemble` puts the answer on the request's grid.

Tenancy: a tenant sees its own tenant's series only; the system-wide figures (queues, utilisation, tick) have
no tenant's share and are an admin's (docs/observability.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tickwork.model.errors import Forbidden, InvalidInput
from tickwork.model.policies import Band
from tickwork.model.states import DeferReason

MAX_QUERIES = 500  # GetMetricData's own limit per call
MIN_PERIOD_SECONDS = 60
MAX_PERIOD_SECONDS = 3600
MAX_RANGE = timedelta(hours=24)
DEFAULT_RANGE = timedelta(hours=1)
# Years 2000 to 2099 as written, as every instant the API takes (tickwork.model.schedule.CallerInstant): in UTC, from
# 2000-01-01T00:00+14:00 to 2099-12-31T23:59-12:00.
EARLIEST = datetime(1999, 12, 31, 10, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, 12, tzinfo=UTC)

BAND = "band"
TENANT = "tenant"


@dataclass(frozen=True)
class MetricsContext:
    """Where this deployment's figures live: the EMF namespace and service, the band queues' names, and the
    executor function with the concurrency it is allowed (None: utilisation has no data)."""

    namespace: str
    service: str
    queue_names: Mapping[Band, str]
    executor_function: str | None = None
    executor_concurrency: int | None = None


@dataclass(frozen=True)
class SeriesPlan:
    """One series of the answer: which query's result it is."""

    name: str
    label: str
    unit: str
    dimensions: dict[str, str]
    query_id: str | None  # None: nothing to ask (the figure is not configured here), all null


@dataclass
class MetricsPlan:
    queries: list[dict[str, Any]] = field(default_factory=list)
    series: list[SeriesPlan] = field(default_factory=list)

    def next_id(self, prefix: str = "q") -> str:
        # GetMetricData ids start with a lower-case letter; `q` for queries, `e` for expressions.
        return f"{prefix}{len(self.queries)}"


# A series' queries: given the plan (to add hidden queries to), the series' dimensions, the period and the
# context, add what it needs and return the id of the query whose result is the series (None: not configured).
Builder = Callable[[MetricsPlan, Mapping[str, str], int, MetricsContext], str | None]


@dataclass(frozen=True)
class CatalogueEntry:
    name: str
    label: str
    unit: str  # as CloudWatch spells it
    dimensions: tuple[str, ...]  # the breakdowns it has: band, tenant
    build: Builder
    total: bool = True  # has a series over everything (dimensions {})

    @property
    def system_wide(self) -> bool:
        """No tenant has a share of it: an admin's figure."""
        return TENANT not in self.dimensions


def metric_stat(
    query_id: str, namespace: str, metric: str, dimensions: Mapping[str, str], stat: str, period: int, *, hidden: bool
) -> dict[str, Any]:
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": metric,
                "Dimensions": [{"Name": k, "Value": v} for k, v in sorted(dimensions.items())],
            },
            "Period": period,
            "Stat": stat,
        },
        "ReturnData": not hidden,
    }


def _add_stat(
    plan: MetricsPlan,
    namespace: str,
    metric: str,
    dimensions: Mapping[str, str],
    stat: str,
    period: int,
    *,
    hidden: bool = False,
) -> str:
    query_id = plan.next_id()
    plan.queries.append(metric_stat(query_id, namespace, metric, dimensions, stat, period, hidden=hidden))
    return query_id


def _add_expression(plan: MetricsPlan, expression: str, label: str) -> str:
    query_id = plan.next_id("e")
    plan.queries.append({"Id": query_id, "Expression": expression, "Label": label, "ReturnData": True})
    return query_id


def _emf_dimensions(series: Mapping[str, str], context: MetricsContext) -> dict[str, str]:
    """An EMF metric's dimensions: Powertools adds `service` to every document it writes."""
    return {"service": context.service, **series}


def emf(metric: str, stat: str) -> Builder:
    """A Tickwork EMF metric under the series' dimensions, as is."""

    def build(plan: MetricsPlan, series: Mapping[str, str], period: int, context: MetricsContext) -> str:
        return _add_stat(plan, context.namespace, metric, _emf_dimensions(series, context), stat, period)

    return build


def _filled_sum(ids: Sequence[str]) -> str:
    return " + ".join(f"FILL({i}, 0)" for i in ids)


def _deferred(plan: MetricsPlan, series: Mapping[str, str], period: int, context: MetricsContext) -> str:
    """RunsDeferred: a tenant's own; the total is the sum over each Reason (emitted with Reason only)."""
    if series:
        return _add_stat(plan, context.namespace, "RunsDeferred", _emf_dimensions(series, context), "Sum", period)
    parts = [
        _add_stat(
            plan,
            context.namespace,
            "RunsDeferred",
            _emf_dimensions({"Reason": reason.value}, context),
            "Sum",
            period,
            hidden=True,
        )
        for reason in DeferReason
    ]
    return _add_expression(plan, _filled_sum(parts), "runs_deferred")


def _failure_rate(plan: MetricsPlan, series: Mapping[str, str], period: int, context: MetricsContext) -> str:
    """failed / (succeeded + failed), in percent; a period where nothing finished has no value."""
    dims = _emf_dimensions(series, context)
    failed = _add_stat(plan, context.namespace, "RunsFailed", dims, "Sum", period, hidden=True)
    succeeded = _add_stat(plan, context.namespace, "RunsSucceeded", dims, "Sum", period, hidden=True)
    expression = f"100 * FILL({failed}, 0) / (FILL({succeeded}, 0) + FILL({failed}, 0))"
    return _add_expression(plan, expression, "failure_rate")


def sqs(metric: str) -> Builder:
    """AWS/SQS's own metric of the series' band queue (published once a minute; Maximum over the period)."""

    def build(plan: MetricsPlan, series: Mapping[str, str], period: int, context: MetricsContext) -> str:
        queue = context.queue_names[Band(series[BAND])]
        return _add_stat(plan, "AWS/SQS", metric, {"QueueName": queue}, "Maximum", period)

    return build


def _utilisation(plan: MetricsPlan, series: Mapping[str, str], period: int, context: MetricsContext) -> str | None:
    """The executor's invocations in flight (AWS/Lambda ConcurrentExecutions, Maximum) against the concurrency
    its event sources allow (the sum of their MaximumConcurrency), in percent."""
    if context.executor_function is None or context.executor_concurrency is None:
        return None
    in_flight = _add_stat(
        plan,
        "AWS/Lambda",
        "ConcurrentExecutions",
        {"FunctionName": context.executor_function},
        "Maximum",
        period,
        hidden=True,
    )
    return _add_expression(plan, f"100 * {in_flight} / {context.executor_concurrency}", "executor_utilisation")


CATALOGUE: dict[str, CatalogueEntry] = {
    e.name: e
    for e in (
        CatalogueEntry(
            "lateness_p50", "Start lateness p50", "Milliseconds", (BAND, TENANT), emf("StartLatenessMs", "p50")
        ),
        CatalogueEntry(
            "lateness_p99", "Start lateness p99", "Milliseconds", (BAND, TENANT), emf("StartLatenessMs", "p99")
        ),
        CatalogueEntry("runs_succeeded", "Runs succeeded", "Count", (TENANT,), emf("RunsSucceeded", "Sum")),
        CatalogueEntry("runs_failed", "Runs failed", "Count", (TENANT,), emf("RunsFailed", "Sum")),
        CatalogueEntry("runs_skipped", "Runs skipped", "Count", (TENANT,), emf("RunsSkipped", "Sum")),
        CatalogueEntry("runs_deferred", "Runs deferred by a limit", "Count", (TENANT,), _deferred),
        CatalogueEntry("failure_rate", "Failure rate", "Percent", (TENANT,), _failure_rate),
        CatalogueEntry("retries", "Retries", "Count", (TENANT,), emf("RunsRetried", "Sum")),
        CatalogueEntry(
            "queue_depth",
            "Queue depth (messages visible)",
            "Count",
            (BAND,),
            sqs("ApproximateNumberOfMessagesVisible"),
            total=False,
        ),
        CatalogueEntry(
            "queue_oldest_age",
            "Age of the oldest message",
            "Seconds",
            (BAND,),
            sqs("ApproximateAgeOfOldestMessage"),
            total=False,
        ),
        CatalogueEntry("executor_utilisation", "Executor utilisation", "Percent", (), _utilisation),
        CatalogueEntry("tick_dispatch_lag", "Tick dispatch lag", "Milliseconds", (), emf("DispatchLagMs", "Maximum")),
    )
}


@dataclass(frozen=True)
class MetricsRequest:
    """A request, validated: the names (in catalogue order), the grid and the filters."""

    names: tuple[str, ...]
    period: int
    start: datetime  # aligned down to the period
    end: datetime
    band: Band | None = None
    tenant: str | None = None

    def grid(self) -> list[datetime]:
        """Every period's start from `start` up to (not including) `end`."""
        step = timedelta(seconds=self.period)
        count = math.ceil((self.end - self.start) / step)
        return [self.start + i * step for i in range(count)]


def align_down(instant: datetime, period: int) -> datetime:
    seconds = int(instant.timestamp())
    return datetime.fromtimestamp(seconds - seconds % period, UTC)


def parse_names(names: str | None) -> tuple[str, ...] | None:
    """Comma-separated catalogue names (None: absent); an unknown one is refused, naming `names`."""
    if names is None:
        return None
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if not wanted:
        raise InvalidInput.one("names", "give at least one catalogue name, or leave `names` out for all")
    unknown = [n for n in wanted if n not in CATALOGUE]
    if unknown:
        raise InvalidInput.one(
            "names", f"unknown metric {', '.join(unknown)}; the catalogue has {', '.join(CATALOGUE)}"
        )
    return tuple(n for n in CATALOGUE if n in wanted)


def metrics_request(
    *,
    names: str | None,
    period: int,
    start: datetime | None,
    end: datetime | None,
    now: datetime,
    band: Band | None = None,
    tenant: str | None = None,
) -> MetricsRequest:
    """Validate a request's values together (each field's own bounds are the edge's): 422 naming the field."""
    if period < MIN_PERIOD_SECONDS or period > MAX_PERIOD_SECONDS or period % 60:
        raise InvalidInput.one("period", f"must be {MIN_PERIOD_SECONDS} to {MAX_PERIOD_SECONDS} s, a multiple of 60")
    for field_name, value in (("start", start), ("end", end)):
        if value is not None and value.tzinfo is None:
            raise InvalidInput.one(field_name, "an instant needs its offset (Z or +hh:mm)")
        if value is not None and not EARLIEST <= value < LATEST:
            raise InvalidInput.one(field_name, "years 2000 to 2099, as every instant of the API")
    parsed = parse_names(names)
    until = (end or now).astimezone(UTC)
    since = (start or until - DEFAULT_RANGE).astimezone(UTC)
    if since >= until:
        raise InvalidInput.one("start", "must be before end")
    if until - since > MAX_RANGE:
        raise InvalidInput.one("start", "the range from start to end is at most 24 hours")
    return MetricsRequest(
        names=parsed if parsed is not None else tuple(CATALOGUE),
        period=period,
        start=align_down(since, period),
        end=until,
        band=band,
        tenant=tenant,
    )


def for_caller(request: MetricsRequest, *, tenant: str, admin: bool, names_given: bool) -> MetricsRequest:
    """What the caller may see: an admin everything; a tenant its own tenant's figures only. Without `names` a
    tenant gets every figure it has a share of; naming a system-wide one, or another tenant, is refused."""
    if admin:
        return request
    if request.tenant is not None and request.tenant != tenant:
        raise Forbidden("a tenant sees its own figures only: `tenant` must be the caller's or left out")
    names = request.names
    if names_given:
        refused = [n for n in names if CATALOGUE[n].system_wide]
        if refused:
            raise Forbidden(f"{', '.join(refused)}: system-wide figures, an admin's (no tenant has a share of them)")
    else:
        names = tuple(n for n in names if not CATALOGUE[n].system_wide)
    return MetricsRequest(names, request.period, request.start, request.end, request.band, tenant)


def series_dimensions(entry: CatalogueEntry, request: MetricsRequest) -> list[dict[str, str]]:
    """The series a name gives for the request's filters: the tenant's own when `tenant` is given and the name
    has tenant figures; else the band's when `band` is given and it has band figures; else its total and, by
    band, one per band (tenant breakdowns are listed only for a named tenant)."""
    if request.tenant is not None and TENANT in entry.dimensions:
        return [{TENANT: request.tenant}]
    if request.band is not None and BAND in entry.dimensions:
        return [{BAND: request.band.value}]
    found: list[dict[str, str]] = [{}] if entry.total else []
    if BAND in entry.dimensions:
        found += [{BAND: band.value} for band in Band]
    return found


def plan(request: MetricsRequest, context: MetricsContext) -> MetricsPlan:
    """Every query the request needs, for one GetMetricData call."""
    built = MetricsPlan()
    for name in request.names:
        entry = CATALOGUE[name]
        for dimensions in series_dimensions(entry, request):
            query_id = entry.build(built, dimensions, request.period, context)
            built.series.append(SeriesPlan(name, entry.label, entry.unit, dimensions, query_id))
    if len(built.queries) > MAX_QUERIES:  # a catalogue far beyond today's ~40 queries would need two calls
        raise InvalidInput.one("names", f"the request needs {len(built.queries)} queries, over {MAX_QUERIES}")
    return built


@dataclass(frozen=True)
class Series:
    """A planned series (`of`) with its values on the grid."""

    of: SeriesPlan
    timestamps: list[datetime]
    values: list[float | None]


def assemble(request: MetricsRequest, built: MetricsPlan, results: Mapping[str, Mapping[int, float]]) -> list[Series]:
    """Each series on the whole grid: the value of the period starting at each instant (epoch seconds in
    `results`), None where CloudWatch has none."""
    grid = request.grid()
    out = []
    for s in built.series:
        found = results.get(s.query_id, {}) if s.query_id is not None else {}
        values = [_finite(found.get(int(t.timestamp()))) for t in grid]
        out.append(Series(s, grid, values))
    return out


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
