"""The replication lag the health endpoint shows (docs/regions.md, RegionMode eventual): CloudWatch's
`ReplicationLatency` of the global table (namespace AWS/DynamoDB, dimensions TableName and ReceivingRegion), that is
how long this region's writes take to reach each other region; the largest of each region's latest minute (its
Maximum) over the last 5 minutes.

One GetMetricData per read, kept for a minute in the execution environment, so the health endpoint costs CloudWatch
at most one call a minute per environment. A read that fails, or finds no data, answers no lag with why: the health
endpoint never fails for it. Locally the same metric is published into each region's moto by the local runtime, from
its replicator (tickwork_local.aws.replication_latency), so this reads it the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, Field

from tickwork.model.clock import Clock
from tickwork.model.regions import RegionMode
from tickwork.observability import logger

NAMESPACE = "AWS/DynamoDB"
METRIC = "ReplicationLatency"
WINDOW = timedelta(minutes=5)
KEPT_FOR = timedelta(minutes=1)
PERIOD_SECONDS = 60


class ReplicationLag(BaseModel):
    replication_lag_ms: float | None = Field(
        default=None,
        description="How long this region's writes take to reach the slowest other region: the largest latest "
        "minute's Maximum of CloudWatch's ReplicationLatency over the last 5 minutes (RegionMode eventual); read "
        "at most once a minute. Null when it cannot be told (replication_lag_reason says why).",
    )
    replication_lag_reason: str | None = Field(default=None, description="Why replication_lag_ms is null.")


class SeriesReader(Protocol):
    def read(
        self, queries: Sequence[dict[str, Any]], start: datetime, end: datetime
    ) -> dict[str, dict[int, float]]: ...


def latency_queries(table: str, receiving: Sequence[str]) -> list[dict[str, Any]]:
    """One GetMetricData query per receiving region, ids r0, r1, ..."""
    return [
        {
            "Id": f"r{i}",
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": METRIC,
                    "Dimensions": [{"Name": "TableName", "Value": table}, {"Name": "ReceivingRegion", "Value": to}],
                },
                "Period": PERIOD_SECONDS,
                "Stat": "Maximum",
            },
            "ReturnData": True,
        }
        for i, to in enumerate(receiving)
    ]


def slowest_latest(found: dict[str, dict[int, float]]) -> float | None:
    """The largest of each series' latest value; None when no series has one."""
    latest = [values[max(values)] for values in found.values() if values]
    return max(latest) if latest else None


class ReplicationLagReader:
    def __init__(
        self,
        series: SeriesReader,
        clock: Clock,
        *,
        mode: RegionMode,
        table: str,
        region: str,
        regions: Sequence[str],
    ) -> None:
        self.series, self.clock, self.mode, self.table = series, clock, mode, table
        self.receiving = [r for r in regions if r != region]
        self._kept: tuple[datetime, ReplicationLag] | None = None

    def read(self) -> ReplicationLag:
        if self.mode is not RegionMode.EVENTUAL:
            return ReplicationLag(replication_lag_reason="not RegionMode eventual")
        now = self.clock.now()
        if self._kept is not None and now < self._kept[0] + KEPT_FOR:
            return self._kept[1]
        lag = self._read(now)
        self._kept = (now, lag)
        return lag

    def _read(self, now: datetime) -> ReplicationLag:
        if not self.receiving:
            return ReplicationLag(replication_lag_reason="no other region in GlobalTableRegions")
        try:
            found = self.series.read(latency_queries(self.table, self.receiving), now - WINDOW, now)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("the replication lag could not be read", extra={"error": f"{type(exc).__name__}: {exc}"})
            return ReplicationLag(replication_lag_reason=f"CloudWatch could not be read ({type(exc).__name__})")
        slowest = slowest_latest(found)
        if slowest is None:
            return ReplicationLag(replication_lag_reason=f"no {METRIC} data in the last 5 minutes")
        return ReplicationLag(replication_lag_ms=round(slowest, 1))
