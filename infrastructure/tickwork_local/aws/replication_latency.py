"""The local replicator's latencies as DynamoDB's own metric: `ReplicationLatency` (namespace AWS/DynamoDB, dimensions
TableName and ReceivingRegion, in milliseconds) put into the origin region's moto CloudWatch, as AWS publishes it in
the region the writes come from. The nodes' health endpoint then reads the lag with the product's code
(tickwork.control.replication_lag), as on AWS. `tickwork dev --regions ... --region-mode eventual` runs one after the
replicator's pumps, every 10 s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from tickwork.control.replication_lag import METRIC, NAMESPACE
from tickwork.model.clock import Clock, SystemClock
from tickwork.observability import logger

PUBLISH_EVERY_SECONDS = 10.0

Latencies = Callable[[], dict[tuple[str, str], float]]  # seconds per (origin, destination): the replicator's


class ReplicationLatencyPublisher:
    def __init__(
        self, latencies: Latencies, cloudwatch_of: Mapping[str, Any], *, table: str, clock: Clock | None = None
    ) -> None:
        self.latencies, self.cloudwatch_of, self.table = latencies, cloudwatch_of, table
        self.clock = clock or SystemClock()

    def publish(self) -> int:
        """Put each route's latency since the last call into its origin's CloudWatch; how many were put. A region
        whose endpoint does not answer misses this period's points (as a metric would)."""
        put, now = 0, self.clock.now()
        for (origin, to), seconds in sorted(self.latencies().items()):
            datum = {
                "MetricName": METRIC,
                "Dimensions": [{"Name": "TableName", "Value": self.table}, {"Name": "ReceivingRegion", "Value": to}],
                "Timestamp": now,
                "Value": round(seconds * 1000, 1),
                "Unit": "Milliseconds",
            }
            try:
                self.cloudwatch_of[origin].put_metric_data(Namespace=NAMESPACE, MetricData=[datum])
            except (ClientError, BotoCoreError) as exc:
                logger.warning(
                    "replication latency not published", extra={"region": origin, "error": type(exc).__name__}
                )
                continue
            put += 1
        return put

    def publish_every(self, seconds: float = PUBLISH_EVERY_SECONDS) -> Callable[[], None]:
        """A step to call often (after each of the replicator's pumps) that publishes once `seconds` have passed."""
        last = [self.clock.now()]

        def step() -> None:
            now = self.clock.now()
            if (now - last[0]).total_seconds() >= seconds:
                last[0] = now
                self.publish()

        return step
