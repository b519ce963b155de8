"""Run logs: the lines a handler logs with `ctx.log(...)`, collected per attempt and kept beside the result.

Each line goes at once to the function's structured log (Powertools, with the run id and attempt), and is
collected in memory for the attempt, up to LIMIT_LINES lines and LIMIT_BYTES bytes (each line counted as its
compact JSON). Past either cap the attempt's log is `truncated`: later lines go to the function's log only,
and one marker line, kept outside the caps, ends the collected lines with how many were left out.

After the handler ends (succeeded, failed, timed out or cancelled), an attempt that logged anything writes one
object, `logs/<tenant>/<job id>/<run id>/<requeues>-<attempt>.json`, with If-None-Match: * (see
tickwork.results.ResultStore.write_logs_once). One object per attempt rather than one per run: each is then
written once, whole, without reading what an earlier attempt wrote, and no attempt can overwrite another's
(a duplicate delivery of a finished run never leases it, so never writes). An attempt that logged nothing writes
nothing: a job that does not log pays no S3 request.

Tickwork adds nothing of the payload: a line holds the handler's message and the fields it chose to pass.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import quote

from tickwork.model.clock import Clock, iso
from tickwork.model.run import Run
from tickwork.observability import logger
from tickwork.settings import ApiSettings

LIMIT_BYTES = 64 * 1024  # per attempt: the collected lines, each as compact JSON
LIMIT_LINES = 1000  # per attempt
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_LOG_METHODS = {"DEBUG": logger.debug, "INFO": logger.info, "WARNING": logger.warning, "ERROR": logger.error}


def _compact(value: Any) -> str:
    # default=str: a handler's field that JSON cannot hold (a datetime, a Decimal) is kept as its text.
    return json.dumps(value, separators=(",", ":"), default=str)


class RunLog:
    """One attempt's log: what `ctx.log` and `ctx.logger` write to. Thread-safe (a handler may log from threads)."""

    def __init__(
        self,
        run_id: str,
        attempt: int,
        clock: Clock,
        *,
        limit_bytes: int = LIMIT_BYTES,
        limit_lines: int = LIMIT_LINES,
    ) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self.clock = clock
        self.limit_bytes = limit_bytes
        self.limit_lines = limit_lines
        self._lines: list[dict[str, Any]] = []
        self._bytes = 0
        self._dropped = 0
        self._lock = threading.Lock()

    def log(self, message: str, level: str = "INFO", **fields: Any) -> None:
        """Log a line: to the function's structured log now, and to the run's collected log while under the caps.
        `level` is DEBUG, INFO, WARNING or ERROR (any case); `fields` are the handler's own, kept as JSON."""
        name = level.upper() if isinstance(level, str) else level
        if name not in LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
        text = str(message)
        plain = json.loads(_compact(fields))  # what the stored line will hold, whatever the handler passed
        _LOG_METHODS[name](text, extra={"run_id": self.run_id, "attempt": self.attempt, "fields": plain})
        line = {"at": iso(self.clock.now()), "level": name, "message": text, "fields": plain}
        size = len(_compact(line).encode())
        with self._lock:
            if self._dropped or len(self._lines) >= self.limit_lines or self._bytes + size > self.limit_bytes:
                self._dropped += 1  # the caps are reached: this line and all later ones stay out
                return
            self._lines.append(line)
            self._bytes += size

    def debug(self, message: str, **fields: Any) -> None:
        self.log(message, "DEBUG", **fields)

    def info(self, message: str, **fields: Any) -> None:
        self.log(message, "INFO", **fields)

    def warning(self, message: str, **fields: Any) -> None:
        self.log(message, "WARNING", **fields)

    def error(self, message: str, **fields: Any) -> None:
        self.log(message, "ERROR", **fields)

    @property
    def empty(self) -> bool:
        with self._lock:
            return not self._lines and not self._dropped

    def document(self, requeues: int = 0) -> dict[str, Any]:
        """The object stored for this attempt: its lines, and when truncated a final marker line."""
        with self._lock:
            lines = list(self._lines)
            dropped = self._dropped
        if dropped:
            lines.append(
                {
                    "at": iso(self.clock.now()),
                    "level": "WARNING",
                    "message": f"log truncated: {dropped} later line(s) over this attempt's cap of "
                    f"{self.limit_lines} lines or {self.limit_bytes} bytes are only in the function's log",
                    "fields": {"truncated": True, "dropped_lines": dropped},
                }
            )
        return {
            "run_id": self.run_id,
            "attempt": self.attempt,
            "requeues": requeues,
            "truncated": bool(dropped),
            "limit_bytes": self.limit_bytes,
            "limit_lines": self.limit_lines,
            "lines": lines,
        }


class RunLogObjects(Protocol):
    """Where attempts' logs are kept (tickwork.results.ResultStore)."""

    def read_logs(self, run: Run) -> list[dict[str, Any]]: ...


class RunReader(Protocol):
    """A tenant's run, NotFound otherwise (tickwork.queries.JobQueries)."""

    def get_run(self, tenant: str, run_id: str) -> Run: ...


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

    def read(self, tenant: str, run_id: str) -> RunLogView:
        run = self.runs.get_run(tenant, run_id)
        lines: list[dict[str, Any]] = []
        truncated = False
        for document in self.objects.read_logs(run):
            attempt = int(document.get("attempt", 0))
            lines += [{**line, "attempt": attempt} for line in document.get("lines", [])]
            truncated = truncated or bool(document.get("truncated"))
        url = self.insights.url(run, self.clock.now()) if self.insights is not None else None
        return RunLogView(run.id, lines, truncated, LIMIT_BYTES, url)
