"""The local MREC replicator (tickwork_local.aws.replicator) between two regions' tables in moto, through real boto3
clients: each region is moto's own region (its own table of the same name, as global tables' replicas share it).

Time is a FakeClock: the replicator's lag counts on it, and moto stamps the stream records with it too (moto's own
clock patched, as the SQS tests patch moto's), so which write is later is what the test says, never a race."""

from __future__ import annotations

from typing import Any

import boto3
import moto.dynamodb.models.table
import pytest
from botocore.exceptions import EndpointConnectionError
from tickwork.model.clock import FakeClock
from tickwork_local.aws.replicator import Replica, Replicator

from tests.harness import create_keyed_table

EAST, WEST = "us-east-1", "eu-west-1"  # WEST sorts first: a tie would go to EAST, so the tests never rely on ties
TABLE = "jobs"
LAG = 1.0
KEY = {"pk": {"S": "job#1"}, "sk": {"S": "run#1"}}


def _item(value: str) -> dict[str, Any]:
    return {**KEY, "status": {"S": value}}


def _streams(region: str) -> Any:
    # The regional endpoint, given: botocore's endpoint rules send DescribeStream to an account endpoint moto
    # does not serve (tickwork dev's clients name the local endpoint anyway).
    return boto3.client(
        "dynamodbstreams", region_name=region, endpoint_url=f"https://streams.dynamodb.{region}.amazonaws.com"
    )


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(moto.dynamodb.models.table, "utcnow", lambda: fake.now().replace(tzinfo=None))
    return fake


@pytest.fixture
def regions(mocked_aws: None) -> dict[str, Any]:
    clients = {}
    for region in (EAST, WEST):
        client = boto3.client("dynamodb", region_name=region)
        create_keyed_table(client, TABLE)
        clients[region] = client
    return clients


@pytest.fixture
def replicator(regions: dict[str, Any], clock: FakeClock) -> Replicator:
    replicas = [Replica(region, TABLE, client, _streams(region)) for region, client in regions.items()]
    built = Replicator(replicas, lag_seconds=LAG, clock=clock)
    built.enable_streams()
    return built


def _held(regions: dict[str, Any], region: str) -> str | None:
    item = regions[region].get_item(TableName=TABLE, Key=KEY).get("Item")
    return item["status"]["S"] if item else None


def test_a_write_in_one_region_appears_in_the_other_only_after_the_lag(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    regions[EAST].put_item(TableName=TABLE, Item=_item("PENDING"))
    replicator.pump()
    assert (_held(regions, EAST), _held(regions, WEST)) == ("PENDING", None)
    clock.advance(LAG - 0.01)
    replicator.pump()
    assert _held(regions, WEST) is None
    clock.advance(0.01)
    replicator.pump()
    assert _held(regions, WEST) == "PENDING"
    replicator.pump()  # its echo in WEST's stream is recognised: nothing goes back to EAST
    assert replicator.counts.read == 1
    assert replicator.counts.applied == 1


def test_concurrent_writes_to_one_item_converge_to_the_later_write_in_both_regions(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    regions[WEST].put_item(TableName=TABLE, Item=_item("CLAIMED-IN-WEST"))
    clock.advance(0.3)
    regions[EAST].put_item(TableName=TABLE, Item=_item("CLAIMED-IN-EAST"))  # later: wins everywhere
    replicator.pump()
    assert (_held(regions, EAST), _held(regions, WEST)) == ("CLAIMED-IN-EAST", "CLAIMED-IN-WEST")  # diverged
    clock.advance(LAG)
    replicator.pump()
    replicator.pump()
    assert (_held(regions, EAST), _held(regions, WEST)) == ("CLAIMED-IN-EAST", "CLAIMED-IN-EAST")
    assert replicator.counts.superseded == 1  # WEST's write reached EAST after EAST's later one, and lost


def _two_writes_replicated(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock, first: tuple[str, str], second: tuple[str, str]
) -> None:
    """The item written as `first` says ((region, status)), 0.2 s later as `second` says; then replicated."""
    for (region, status), wait in ((first, 0.2), (second, 0.0)):
        regions[region].put_item(TableName=TABLE, Item=_item(status))
        clock.advance(wait)
    replicator.pump()
    clock.advance(LAG)
    replicator.pump()
    replicator.pump()


def test_the_earlier_write_loses_whichever_region_made_it(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    _two_writes_replicated(regions, replicator, clock, (EAST, "FIRST"), (WEST, "SECOND"))
    assert (_held(regions, EAST), _held(regions, WEST)) == ("SECOND", "SECOND")


def test_a_delete_replicates(regions: dict[str, Any], replicator: Replicator, clock: FakeClock) -> None:
    regions[EAST].put_item(TableName=TABLE, Item=_item("DONE"))
    replicator.pump()
    clock.advance(LAG)
    replicator.pump()
    assert _held(regions, WEST) == "DONE"
    regions[EAST].delete_item(TableName=TABLE, Key=KEY)
    replicator.pump()
    assert _held(regions, WEST) == "DONE"  # not yet: the delete has its lag too
    clock.advance(LAG)
    replicator.pump()
    replicator.pump()
    assert (_held(regions, EAST), _held(regions, WEST)) == (None, None)


def test_the_lag_report_is_the_age_of_the_oldest_change_not_yet_replicated(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    assert replicator.lag() == 0.0
    regions[EAST].put_item(TableName=TABLE, Item=_item("A"))
    replicator.pump()
    clock.advance(0.4)
    regions[WEST].put_item(TableName=TABLE, Item={**_item("B"), "sk": {"S": "run#2"}})
    replicator.pump()
    clock.advance(0.3)
    report = replicator.report()
    assert report["lag_seconds"] == pytest.approx(0.7)
    assert report["pending"] == {EAST: 1, WEST: 1}
    clock.advance(0.3)  # EAST's change is due and applied; WEST's, read 0.4 s later, still waits
    replicator.pump()
    assert replicator.report()["pending"] == {EAST: 1, WEST: 0}
    assert replicator.lag() == pytest.approx(0.6)
    clock.advance(0.4)
    replicator.pump()
    assert replicator.lag() == 0.0


def test_the_latencies_are_how_long_applied_changes_took_per_route_since_last_asked(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    regions[EAST].put_item(TableName=TABLE, Item=_item("A"))
    replicator.pump()
    assert replicator.take_latencies() == {}  # nothing applied yet
    clock.advance(LAG + 0.5)
    replicator.pump()
    assert replicator.take_latencies() == pytest.approx({(EAST, WEST): LAG + 0.5})
    assert replicator.take_latencies() == {}


def _before_the_replicators_put(client: Any, write: Any) -> None:
    """`write` runs once, in the destination, just before the replicator's next PutItem there."""
    done: list[bool] = []

    def first(**_: Any) -> None:
        if not done:
            done.append(True)
            write()

    client.meta.events.register("before-call.dynamodb.PutItem", first)


def test_a_replicated_write_never_lands_over_a_newer_local_one(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    """WEST's own write lands after the replicator read the streams and before it writes EAST's older change there:
    the replicated write is conditional, as MREC's are, and loses."""
    regions[EAST].put_item(TableName=TABLE, Item=_item("OLDER"))
    replicator.pump()
    clock.advance(LAG)
    local = boto3.client("dynamodb", region_name=WEST)
    _before_the_replicators_put(regions[WEST], lambda: local.put_item(TableName=TABLE, Item=_item("NEWER")))
    replicator.pump()
    assert _held(regions, WEST) == "NEWER"
    assert replicator.counts.superseded == 1
    replicator.pump()
    clock.advance(LAG)
    replicator.pump()
    assert (_held(regions, EAST), _held(regions, WEST)) == ("NEWER", "NEWER")


def test_a_local_write_the_condition_cannot_see_is_put_back(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    """A local write that only adds an attribute leaves the condition true: the replicated write lands over it, and
    the newer local image, read just before the echo, is put back, in WEST and then in EAST."""
    regions[EAST].put_item(TableName=TABLE, Item=_item("A"))
    replicator.pump()
    clock.advance(LAG)
    replicator.pump()
    regions[EAST].put_item(TableName=TABLE, Item=_item("B"))
    replicator.pump()
    clock.advance(LAG)
    local = boto3.client("dynamodb", region_name=WEST)

    def add_a_note() -> None:
        local.update_item(
            TableName=TABLE, Key=KEY, UpdateExpression="SET note = :n", ExpressionAttributeValues={":n": {"S": "x"}}
        )

    _before_the_replicators_put(regions[WEST], add_a_note)
    replicator.pump()
    assert _held(regions, WEST) == "B"  # the note's write was overwritten
    replicator.pump()
    assert replicator.counts.repaired == 1
    clock.advance(LAG)
    replicator.pump()
    replicator.pump()
    for region in (EAST, WEST):
        item = regions[region].get_item(TableName=TABLE, Key=KEY)["Item"]
        assert (item["status"]["S"], item["note"]["S"]) == ("A", "x")


def test_a_region_that_does_not_answer_keeps_its_changes_until_it_does(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    down = [True]

    def refuse(request: Any, **_: Any) -> None:
        if down[0]:
            raise EndpointConnectionError(endpoint_url=request.url)

    regions[WEST].meta.events.register("before-send.dynamodb.PutItem", refuse)
    regions[EAST].put_item(TableName=TABLE, Item=_item("PENDING"))
    replicator.pump()
    clock.advance(LAG)
    replicator.pump()
    assert _held(regions, WEST) is None
    assert replicator.counts.unreachable == 1
    assert replicator.report()["pending"] == {EAST: 0, WEST: 1}
    clock.advance(5)
    assert replicator.lag() == pytest.approx(LAG + 5)
    down[0] = False
    replicator.pump()
    assert _held(regions, WEST) == "PENDING"
    assert replicator.lag() == 0.0


def test_a_replicator_needs_two_regions_and_a_lag_that_is_not_negative(regions: dict[str, Any]) -> None:
    east = Replica(EAST, TABLE, regions[EAST], _streams(EAST))
    with pytest.raises(ValueError, match="two or more replicas"):
        Replicator([east], lag_seconds=1)
    with pytest.raises(ValueError, match="two or more replicas"):
        Replicator([east, east], lag_seconds=1)
    west = Replica(WEST, TABLE, regions[WEST], _streams(WEST))
    with pytest.raises(ValueError, match="negative"):
        Replicator([east, west], lag_seconds=-1)


def test_a_stream_without_the_images_is_refused(regions: dict[str, Any], clock: FakeClock) -> None:
    regions[WEST].update_table(
        TableName=TABLE, StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}
    )
    replicas = [Replica(region, TABLE, client, _streams(region)) for region, client in regions.items()]
    with pytest.raises(ValueError, match="KEYS_ONLY"):
        Replicator(replicas, lag_seconds=LAG, clock=clock).enable_streams()


def test_two_changes_to_one_item_replicated_together_are_written_once_each(
    regions: dict[str, Any], replicator: Replicator, clock: FakeClock
) -> None:
    _two_writes_replicated(regions, replicator, clock, (EAST, "QUEUED"), (EAST, "RUNNING"))
    assert _held(regions, WEST) == "RUNNING"
    assert vars(replicator.counts) == {"read": 2, "applied": 2, "superseded": 0, "repaired": 0, "unreachable": 0}
