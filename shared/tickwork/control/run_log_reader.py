"""Run logs, the reader: what `GET /v1/runs/{id}/logs` answers, every attempt's lines as the executor kept them
(tickwork.jobtypes.run_log collects them), and a Logs Insights link to the run's lines when deployed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import quote

from tickwork.jobtypes.run_log import LIMIT_BYTES
from tickwork.model.clock import Clock, iso
from tickwork.model.run import Run
from tickwork.settings import ApiSettings


class RunLogObjects(Protocol):
    """Where attempts' logs are kept (tickwork.aws.results.ResultStore)."""

    def read_logs(self, run: Run) -> list[dict[str, Any]]: ...


class RunReader(Protocol):
    """A tenant's run, NotFound otherwise (tickwork.control.queries.JobQueries)."""

    def get_run(self, tenant: str, run_id: str, *, admin: bool = False) -> Run: ...


@dataclass(frozen=True)
class RunLogView:
    """A run's logs as the API answers them: every attempt's lines, in order."""

    run_id: str
    lines: list[dict[str, Any]]
    truncated: bool
    limit_bytes: int
    insights_url: str | None


@dataclass(frozen=True)
class InsightsLink:
    """Where a deployed run's lines are in CloudWatch Logs: the region and the executor's log group(s)."""

    region: str
    log_groups: tuple[str, ...]

    def url(self, run: Run, now: datetime) -> str:
        """A Logs Insights console link querying the run's lines, from shortly before it was scheduled or queued
        to shortly after it finished (or now)."""
        query = (
            "fields @timestamp, level, attempt, message, fields\n"
            f"| filter run_id = '{run.id}'\n"
            "| sort @timestamp asc\n"
            "| limit 10000"
        )
        margin = timedelta(minutes=5)
        start = min(t for t in (run.scheduled_for, run.enqueued_at) if t is not None) - margin
        end = (run.finished_at or now) + margin
        return insights_console_url(self.region, self.log_groups, query, start, end)


def insights_console_url(region: str, log_groups: tuple[str, ...], query: str, start: datetime, end: datetime) -> str:
    """The CloudWatch console's Logs Insights link for a query over log groups in a time range. The console reads
    its fragment in its own encoding: each value URI-encoded (all but letters, digits and `-_.`) with `%` as `*`,
    strings after a `'`, objects and lists as `~(...)` joined by `~`; then the whole escaped, URI-encoded again,
    with `%` as `$`."""

    def value(text: str) -> str:
        return "'" + quote(text, safe="-_.").replace("%", "*")

    detail = (
        f"~(end~{value(iso(end) or '')}~start~{value(iso(start) or '')}~timeType~'ABSOLUTE~tz~'UTC"
        f"~editorString~{value(query)}~isLiveTail~false~source~(~{'~'.join(value(g) for g in log_groups)}))"
    )
    escaped = quote(detail, safe="@*_+-./")  # JavaScript's escape(): it encodes ~ ( ) and '
    fragment = quote("?queryDetail=" + escaped, safe="-_.!~*'()").replace("%", "$")
    return f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#logsV2:logs-insights{fragment}"


def insights_link_of(settings: ApiSettings) -> InsightsLink | None:
    """The Logs Insights link, deployed only: when the API runs in Lambda (which names the function) and the
    template named the executor's log group. The local runtime keeps no CloudWatch logs to link to, whatever its
    auth mode."""
    if not settings.lambda_function_name or not settings.executor_log_groups or not settings.region:
        return None
    return InsightsLink(settings.region, settings.executor_log_groups)


@dataclass(frozen=True)
class RunLogQueries:
    """What a tenant reads of a run's logs: another tenant's run, or an unknown one, is NotFound (as GET /runs/{id})."""

    runs: RunReader
    objects: RunLogObjects
    clock: Clock
    insights: InsightsLink | None = None  # deployed only

    def read(self, tenant: str, run_id: str, *, admin: bool = False) -> RunLogView:
        run = self.runs.get_run(tenant, run_id, admin=admin)
        lines: list[dict[str, Any]] = []
        truncated = False
        for document in self.objects.read_logs(run):
            attempt = int(document.get("attempt", 0))
            lines += [{**line, "attempt": attempt} for line in document.get("lines", [])]
            truncated = truncated or bool(document.get("truncated"))
        url = self.insights.url(run, self.clock.now()) if self.insights is not None else None
        return RunLogView(run.id, lines, truncated, LIMIT_BYTES, url)
