"""The replication lag the health endpoint shows (tickwork.control.replication_lag), read from CloudWatch's
`ReplicationLatency` in moto, as the local runtime publishes it from its replicator
(tickwork_local.aws.replication_latency): per region, what its writes took to reach the others."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from tickwork.aws.metric_series import MetricSeries
from tickwork.control.replication_lag import ReplicationLag, ReplicationLagReader
from tickwork.model.clock import FakeClock
from tickwork.model.regions import RegionMode
from tickwork_local.aws.replication_latency import ReplicationLatencyPublisher

EAST, WEST, CENTRAL = "us-east-1", "us-west-2", "eu-central-1"
REGIONS = (EAST, WEST, CENTRAL)
TABLE = "tickwork-jobs"


@pytest.fixture
def cloudwatch(mocked_aws: None) -> dict[str, Any]:
    return {region: boto3.client("cloudwatch", region_name=region) for region in REGIONS}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _reader(
    cloudwatch: dict[str, Any], clock: FakeClock, *, region: str = EAST, mode: RegionMode = RegionMode.EVENTUAL
):
    return ReplicationLagReader(
        MetricSeries(cloudwatch[region]), clock, mode=mode, table=TABLE, region=region, regions=REGIONS
    )


def _publish(cloudwatch: dict[str, Any], clock: FakeClock, latencies: dict[tuple[str, str], float]) -> int:
    """Published now; read a second later (a read's window ends at its instant)."""
    put = ReplicationLatencyPublisher(lambda: latencies, cloudwatch, table=TABLE, clock=clock).publish()
    clock.advance(1)
    return put


def test_the_lag_is_the_slowest_receiving_regions_latest_latency_of_this_regions_writes(
    cloudwatch: dict[str, Any], clock: FakeClock
) -> None:
    # WEST's writes to EAST are in WEST's CloudWatch: not EAST's lag.
    assert _publish(cloudwatch, clock, {(EAST, WEST): 1.2, (EAST, CENTRAL): 0.4, (WEST, EAST): 9.0}) == 3
    assert _reader(cloudwatch, clock).read() == ReplicationLag(replication_lag_ms=1200.0)
    assert _reader(cloudwatch, clock, region=WEST).read() == ReplicationLag(replication_lag_ms=9000.0)
    clock.advance(120)
    _publish(cloudwatch, clock, {(EAST, WEST): 0.8})  # the latest minute counts, not the window's largest
    assert _reader(cloudwatch, clock).read() == ReplicationLag(replication_lag_ms=800.0)


def test_a_read_is_kept_for_a_minute(cloudwatch: dict[str, Any], clock: FakeClock) -> None:
    reader = _reader(cloudwatch, clock)
    assert reader.read().replication_lag_reason == "no ReplicationLatency data in the last 5 minutes"
    _publish(cloudwatch, clock, {(EAST, WEST): 2.0})
    clock.advance(58)
    assert reader.read().replication_lag_ms is None  # the kept answer: no second GetMetricData
    clock.advance(1)
    assert reader.read() == ReplicationLag(replication_lag_ms=2000.0)


def test_latencies_older_than_five_minutes_are_no_lag(cloudwatch: dict[str, Any], clock: FakeClock) -> None:
    _publish(cloudwatch, clock, {(EAST, WEST): 2.0})
    clock.advance(6 * 60)
    assert _reader(cloudwatch, clock).read() == ReplicationLag(
        replication_lag_reason="no ReplicationLatency data in the last 5 minutes"
    )


def test_cloudwatch_not_answering_is_no_lag_with_why(cloudwatch: dict[str, Any], clock: FakeClock) -> None:
    def refuse(request: Any, **_: Any) -> None:
        raise EndpointConnectionError(endpoint_url=request.url)

    cloudwatch[EAST].meta.events.register("before-send.monitoring.GetMetricData", refuse)
    assert _reader(cloudwatch, clock).read() == ReplicationLag(
        replication_lag_reason="CloudWatch could not be read (EndpointConnectionError)"
    )


def test_outside_region_mode_eventual_nothing_is_read(cloudwatch: dict[str, Any], clock: FakeClock) -> None:
    _publish(cloudwatch, clock, {(EAST, WEST): 2.0})
    for mode in (RegionMode.SINGLE, RegionMode.STRONG):
        assert _reader(cloudwatch, clock, mode=mode).read() == ReplicationLag(
            replication_lag_reason="not RegionMode eventual"
        )


def test_a_region_alone_has_no_lag(cloudwatch: dict[str, Any], clock: FakeClock) -> None:
    reader = ReplicationLagReader(
        MetricSeries(cloudwatch[EAST]), clock, mode=RegionMode.EVENTUAL, table=TABLE, region=EAST, regions=[EAST]
    )
    assert reader.read().replication_lag_reason == "no other region in GlobalTableRegions"


def test_the_publisher_skips_a_region_that_does_not_answer(cloudwatch: dict[str, Any], clock: FakeClock) -> None:
    def refuse(request: Any, **_: Any) -> None:
        raise EndpointConnectionError(endpoint_url=request.url)

    cloudwatch[WEST].meta.events.register("before-send.monitoring.PutMetricData", refuse)
    assert _publish(cloudwatch, clock, {(EAST, WEST): 1.5, (WEST, EAST): 3.0}) == 1
    assert _reader(cloudwatch, clock).read() == ReplicationLag(replication_lag_ms=1500.0)
    assert _reader(cloudwatch, clock, region=WEST).read().replication_lag_ms is None


def test_the_publishing_step_publishes_once_its_period_has_passed(cloudwatch: dict[str, Any], clock: FakeClock) -> None:
    asked: list[int] = []

    def latencies() -> dict[tuple[str, str], float]:
        asked.append(1)
        return {(EAST, WEST): 0.5}

    step = ReplicationLatencyPublisher(latencies, cloudwatch, table=TABLE, clock=clock).publish_every(10)
    clock.advance(9.9)
    step()
    assert asked == []
    clock.advance(0.1)
    step()
    step()
    assert asked == [1]
    clock.advance(1)
    assert _reader(cloudwatch, clock).read() == ReplicationLag(replication_lag_ms=500.0)
