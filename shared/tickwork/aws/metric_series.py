"""CloudWatch metric data access: one GetMetricData call per request, paged by NextToken.

The queries come from tickwork.control.metrics_catalogue (at most 500, GetMetricData's limit per call); the answer is
each returned query's values by the epoch second its period starts at. Deployed, the client is CloudWatch's;
locally, moto's, fed by the local runtime's EMF forwarding (tickwork_local.aws.emf_forwarding).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

MAX_QUERIES_PER_CALL = 500


class MetricSeries:
    def __init__(self, cloudwatch: Any) -> None:
        self.cloudwatch = cloudwatch

    def read(self, queries: Sequence[dict[str, Any]], start: datetime, end: datetime) -> dict[str, dict[int, float]]:
        """Each returned query's values by period start (epoch seconds). One call, then one per NextToken (a
        call returns at most 100,800 data points)."""
        if not queries:
            return {}
        if len(queries) > MAX_QUERIES_PER_CALL:
            raise ValueError(f"{len(queries)} queries: GetMetricData takes at most {MAX_QUERIES_PER_CALL}")
        found: dict[str, dict[int, float]] = {}
        request: dict[str, Any] = {
            "MetricDataQueries": list(queries),
            "StartTime": start,
            "EndTime": end,
            "ScanBy": "TimestampAscending",
        }
        while True:
            answer = self.cloudwatch.get_metric_data(**request)
            for result in answer.get("MetricDataResults", []):
                values = found.setdefault(result["Id"], {})
                for at, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=False):
                    values[int(at.timestamp())] = float(value)
            token = answer.get("NextToken")
            if not token:
                return found
            request["NextToken"] = token
