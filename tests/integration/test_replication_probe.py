"""The failover's replication probe on AWS (tickwork.control.replication_probe), against moto: two regions' tables
in one moto stand for two replicas of the global table (replication is the test copying the region-role item), and
CloudWatch's ReplicationLatency is put into the old region's moto as the local runtime publishes it
(tickwork_local.aws.replication_latency)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3
import moto.dynamodb.models.table
import pytest
from botocore.exceptions import EndpointConnectionError
from tickwork.aws.clients import AwsClients
from tickwork.aws.metric_series import MetricSeries
from tickwork.control.replication_probe import GlobalTableProbe
from tickwork.model.clock import FakeClock
from tickwork.model.regions import (
    FENCE_READ_TO_WRITE,
    REPLICATION_MARGIN,
    FailoverPlan,
    RegionMode,
    RegionRoles,
    Replication,
    plan_failover,
)
from tickwork.store.conditional import Table
from tickwork.store.regions import RegionRoleRecords
from tickwork_local.aws.replication_latency import ReplicationLatencyPublisher
from tickwork_local.aws.replicator import Replica, Replicator
from tickwork_local.runtime.node import region_endpoints
from tickwork_local.runtime.regions import activate_first_region

from tests.harness import START, create_keyed_table

OLD, TARGET = "us-east-1", "us-west-2"
TABLE = "tickwork-jobs"


class TwoReplicas:
    def __init__(self) -> None:
        self.clock = FakeClock(START)
        self.dynamodb = {r: boto3.client("dynamodb", region_name=r) for r in (OLD, TARGET)}
        self.cloudwatch = {r: boto3.client("cloudwatch", region_name=r) for r in (OLD, TARGET)}
        for client in self.dynamodb.values():
            create_keyed_table(client, TABLE)
        self.probe = GlobalTableProbe(self.records, self.series, self.clock, table=TABLE)

    def records(self, region: str) -> RegionRoleRecords:
        return RegionRoleRecords(Table(self.dynamodb[region], TABLE))

    def series(self, region: str) -> MetricSeries:
        return MetricSeries(self.cloudwatch[region])

    def hand_over(self) -> RegionRoles:
        """OLD active (in both replicas), then the handover written in TARGET's replica, not yet replicated."""
        first = plan_failover(RegionMode.EVENTUAL, None, OLD, (OLD, TARGET), caught_up=None, force=False, now=START)
        assert isinstance(first, FailoverPlan)
        for region in (OLD, TARGET):
            assert self.records(region).fail_over(first)
        handover = plan_failover(
            RegionMode.EVENTUAL, first.roles, TARGET, (OLD, TARGET), caught_up=None, force=False, now=START
        )
        assert isinstance(handover, FailoverPlan)
        assert handover.handover
        assert self.records(TARGET).fail_over(handover)
        return handover.roles

    def replicate_roles(self) -> None:
        """The region-role item reaches OLD's replica."""
        item = self.dynamodb[TARGET].get_item(TableName=TABLE, Key={"pk": {"S": "REGIONS"}, "sk": {"S": "ROLES"}})
        self.dynamodb[OLD].put_item(TableName=TABLE, Item=item["Item"])

    def publish_latency(self, seconds: float) -> None:
        ReplicationLatencyPublisher(
            lambda: {(OLD, TARGET): seconds}, self.cloudwatch, table=TABLE, clock=self.clock
        ).publish()


@pytest.fixture
def replicas(mocked_aws: None) -> TwoReplicas:
    return TwoReplicas()


def _refuse(request: Any, **_: Any) -> None:
    raise EndpointConnectionError(endpoint_url=request.url)


def test_not_caught_up_until_the_old_regions_replica_shows_the_handover_and_its_last_writes_replicated(replicas):
    handover = replicas.hand_over()
    replicas.publish_latency(2.0)
    replicas.clock.advance(5)
    not_seen = replicas.probe.caught_up(handover)
    assert not_seen == Replication(False, "the old active region's replica does not show the handover yet")
    replicas.replicate_roles()
    seen_at = replicas.clock.now()
    assert replicas.probe.caught_up(handover).caught_up is False  # seen: the wait starts now
    wait = FENCE_READ_TO_WRITE + REPLICATION_MARGIN + timedelta(seconds=2)
    replicas.clock.advance((wait - timedelta(seconds=1)).total_seconds())
    waiting = replicas.probe.caught_up(handover)
    assert (waiting.caught_up, waiting.reason) == (
        False,
        "waiting 1 s more for the old region's last writes to replicate",
    )
    replicas.clock.advance(1)
    assert replicas.clock.now() == seen_at + wait
    assert replicas.probe.caught_up(handover) == Replication(True)


def test_without_replication_latency_data_it_cannot_be_told(replicas):
    handover = replicas.hand_over()
    replicas.replicate_roles()
    replicas.clock.advance(3600)
    answer = replicas.probe.caught_up(handover)
    assert answer.caught_up is None
    assert "no ReplicationLatency data" in answer.reason


@pytest.mark.parametrize(
    ("service", "event", "what"),
    [
        ("dynamodb", "before-send.dynamodb.GetItem", "DynamoDB"),
        ("cloudwatch", "before-send.monitoring.GetMetricData", "CloudWatch's ReplicationLatency"),
    ],
)
def test_an_old_region_that_does_not_answer_cannot_tell(replicas, service, event, what):
    handover = replicas.hand_over()
    replicas.replicate_roles()
    replicas.publish_latency(1.0)
    getattr(replicas, service)[OLD].meta.events.register(event, _refuse)
    replicas.clock.advance(3600)
    assert replicas.probe.caught_up(handover) == Replication(
        None, f"the old active region {OLD} did not answer ({what}: EndpointConnectionError)"
    )


def test_with_the_local_replicator_a_handover_completes_once_the_old_regions_last_writes_have_replicated(
    replicas, monkeypatch
):
    """`tickwork dev --regions ... --region-mode eventual`: the replicator carries the items between the tables and
    its latencies become the old region's ReplicationLatency, as the local runtime wires them."""
    monkeypatch.setattr(moto.dynamodb.models.table, "utcnow", lambda: replicas.clock.now().replace(tzinfo=None))
    streams = {  # the regional endpoint, given, as tests/integration/test_replicator.py explains
        r: boto3.client("dynamodbstreams", region_name=r, endpoint_url=f"https://streams.dynamodb.{r}.amazonaws.com")
        for r in (OLD, TARGET)
    }
    replicator = Replicator(
        [Replica(r, TABLE, replicas.dynamodb[r], streams[r]) for r in (OLD, TARGET)],
        lag_seconds=1,
        clock=replicas.clock,
    )
    replicator.enable_streams()
    publisher = ReplicationLatencyPublisher(
        replicator.take_latencies, replicas.cloudwatch, table=TABLE, clock=replicas.clock
    )

    def replicate() -> None:
        replicator.pump()  # read from the streams
        replicas.clock.advance(1)
        replicator.pump()  # applied, its lag passed
        publisher.publish()

    activate_first_region(replicas.records(OLD), [OLD, TARGET], replicas.clock.now())
    replicate()
    active = replicas.records(TARGET).roles()
    assert active is not None
    assert active.active_region == OLD
    handover = plan_failover(
        RegionMode.EVENTUAL, active, TARGET, (OLD, TARGET), caught_up=None, force=False, now=replicas.clock.now()
    )
    assert isinstance(handover, FailoverPlan)
    assert replicas.records(TARGET).fail_over(handover)
    assert replicas.probe.caught_up(handover.roles).caught_up is False  # not replicated yet
    replicate()
    assert replicas.records(OLD).roles() == handover.roles  # the old region's fence reads "nobody active"
    waiting = replicas.probe.caught_up(handover.roles)
    assert waiting.caught_up is False
    assert "waiting 71 s more" in waiting.reason  # the old region's 1 s latency to the target, from its CloudWatch
    replicas.clock.advance(71)
    assert replicas.probe.caught_up(handover.roles) == Replication(True)
    done = plan_failover(
        RegionMode.EVENTUAL,
        handover.roles,
        TARGET,
        (OLD, TARGET),
        caught_up=True,
        force=False,
        now=replicas.clock.now(),
    )
    assert isinstance(done, FailoverPlan)
    assert replicas.records(TARGET).fail_over(done)
    replicate()
    assert replicas.records(OLD).roles() == done.roles


def test_another_regions_clients_send_to_that_regions_endpoint_where_one_is_named(mocked_aws: None) -> None:
    """On AWS its regional endpoint; in `tickwork dev --regions` the node is told each region's endpoint."""
    named = region_endpoints(f"{OLD}=http://127.0.0.1:5001, {TARGET}=http://127.0.0.1:5002")
    assert named == {OLD: "http://127.0.0.1:5001", TARGET: "http://127.0.0.1:5002"}
    clients = AwsClients(endpoint_url="http://127.0.0.1:5002", region_endpoints=named)
    client = clients.regional_client("dynamodb", OLD)
    assert clients.regional_client("dynamodb", OLD) is client  # built once
    assert (client.meta.region_name, client.meta.endpoint_url) == (OLD, "http://127.0.0.1:5001")
    aws = AwsClients().regional_client("cloudwatch", TARGET)
    assert (aws.meta.region_name, aws.meta.endpoint_url) == (TARGET, f"https://monitoring.{TARGET}.amazonaws.com")
