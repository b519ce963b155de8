"""A result readable from any region (docs/regions.md, "Results"): each region's executors write to their own results
bucket, and the result names that region; another region's API, not finding it in its own bucket, reads it there.

Two regions' buckets in one moto (us-east-1, where the run is executed, and us-west-2, whose API reads it); the table
is shared, as an MRSC global table is (RegionMode strong). Requests are counted with a botocore event hook on the
real clients, and the other region's failure is injected the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from tickwork.aws.clients import AwsClients
from tickwork.aws.results import ResultStore
from tickwork.model.errors import NotFound, ResultRegionUnreachable
from tickwork.model.ids import run_id_for
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.services import Services
from tickwork.store.codec import run_key

from tests.harness import START, TENANT, CallLog, Pipeline

FAR = timedelta(seconds=300)
ACCOUNT = "123456789012"
EXECUTED_IN, READ_IN = "us-east-1", "us-west-2"
BUCKETS = {region: f"tickwork-results-{ACCOUNT}-{region}" for region in (EXECUTED_IN, READ_IN)}
PAYLOAD = {"blob": "x" * 100}  # to S3 (InlineResultMaxBytes is 0)


def _buckets() -> None:
    for region, bucket in BUCKETS.items():
        s3 = boto3.client("s3", region_name=region)
        placed = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        s3.create_bucket(Bucket=bucket, **placed)


@pytest.fixture
def executed_in(mocked_aws: None) -> Iterator[Pipeline]:
    """Region us-east-1's tick and executor, in a multi-region stack."""
    _buckets()
    with Pipeline.create(REGION_MODE="strong", RESULTS_BUCKET=BUCKETS[EXECUTED_IN]) as pipeline:
        yield pipeline


@pytest.fixture
def knowing_both(mocked_aws: None) -> Iterator[Pipeline]:
    """Region us-east-1's functions knowing the global table's regions (GlobalTableRegions)."""
    _buckets()
    regions = f"{EXECUTED_IN},{READ_IN}"
    with Pipeline.create(REGION_MODE="strong", RESULTS_BUCKET=BUCKETS[EXECUTED_IN], GLOBAL_TABLE_REGIONS=regions) as p:
        yield p


def _api_in(region: str, pipeline: Pipeline, calls: CallLog) -> Services:
    """Another region's API: its own S3 client and bucket, the same table (the global table's replica)."""
    session = boto3.session.Session(region_name=region)
    calls.attach_session(session)
    settings = pipeline.services.settings.model_copy(update={"results_bucket": BUCKETS[region]})
    api = Services(settings=settings, clients=AwsClients(session), clock=pipeline.clock)
    api.store = pipeline.services.store  # type: ignore[misc]
    return api


def _run_once(pipeline: Pipeline) -> Run:
    job = pipeline.create_job(schedule={"at": START + FAR}, payload=PAYLOAD)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    assert pipeline.drain() == 1
    run = pipeline.run(run_id_for(job.id, START + FAR))
    assert run.status is RunStatus.SUCCEEDED
    return run


def _s3_reads(calls: CallLog) -> list[tuple[str, str]]:
    return [(p["Bucket"], op) for service, op, p in calls.calls if service == "s3"]


def _stored_result(pipeline: Pipeline, run_id: str) -> dict[str, Any]:
    """The run item's `result` attribute, as DynamoDB holds it (its map's typed values)."""
    dynamodb = boto3.client("dynamodb", region_name=EXECUTED_IN)
    item = dynamodb.get_item(TableName=pipeline.resources.table_name, Key=run_key(run_id))["Item"]
    return dict(item["result"]["M"])


def test_a_result_names_the_region_whose_bucket_holds_it_and_that_region_reads_it_there(executed_in):
    run = _run_once(executed_in)
    assert _stored_result(executed_in, run.id)["region"] == {"S": EXECUTED_IN}
    executed_in.calls.clear()
    assert executed_in.services.queries.get_result(TENANT, run.id) == PAYLOAD
    assert _s3_reads(executed_in.calls) == [(BUCKETS[EXECUTED_IN], "GetObject")]  # its own bucket, once
    assert not [key for key in executed_in.services.clients._clients if "@" in key]  # no other region's client


def test_another_regions_api_reads_the_result_in_the_region_that_recorded_it(executed_in):
    run = _run_once(executed_in)
    calls = CallLog()
    api = _api_in(READ_IN, executed_in, calls)
    assert api.queries.get_result(TENANT, run.id) == PAYLOAD
    # Its own bucket first (today's key, then the key before the spread), then one GET in the run's region.
    assert _s3_reads(calls) == [
        (BUCKETS[READ_IN], "GetObject"),
        (BUCKETS[READ_IN], "GetObject"),
        (BUCKETS[EXECUTED_IN], "GetObject"),
    ]
    assert api.clients.regional_client("s3", EXECUTED_IN).meta.region_name == EXECUTED_IN


def test_a_region_that_does_not_answer_is_named_and_the_run_stays_readable(executed_in):
    run = _run_once(executed_in)
    api = _api_in(READ_IN, executed_in, CallLog())

    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url=f"https://s3.{EXECUTED_IN}.amazonaws.com")

    api.clients.regional_client("s3", EXECUTED_IN).meta.events.register("before-send.s3.GetObject", unreachable)
    with pytest.raises(ResultRegionUnreachable) as refused:
        api.queries.get_result(TENANT, run.id)
    assert refused.value.region == EXECUTED_IN
    assert "SUCCEEDED" in str(refused.value)
    assert api.queries.get_run(TENANT, run.id).status is RunStatus.SUCCEEDED


def test_a_region_that_answers_with_an_error_is_named_too(executed_in):
    run = _run_once(executed_in)
    api = _api_in(READ_IN, executed_in, CallLog())
    remote = api.clients.regional_client("s3", EXECUTED_IN)
    remote.meta.events.register("before-send.s3.GetObject", _answer_503)
    with pytest.raises(ResultRegionUnreachable):
        api.queries.get_result(TENANT, run.id)


def _answer_503(request: Any, **_: Any) -> Any:
    from botocore.awsrequest import AWSResponse

    class Raw:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b""

    return AWSResponse(request.url, 503, {}, Raw())


def test_a_result_gone_from_the_region_that_recorded_it_is_no_result_not_an_outage(executed_in):
    run = _run_once(executed_in)
    key = _stored_result(executed_in, run.id)["location"]["S"].split("/", 3)[3]
    executed_in.s3.delete_object(Bucket=BUCKETS[EXECUTED_IN], Key=key)  # expired by the bucket's lifecycle
    api = _api_in(READ_IN, executed_in, CallLog())
    with pytest.raises(NotFound, match="has no result"):
        api.queries.get_result(TENANT, run.id)


def test_a_single_region_makes_the_requests_it_always_made(mocked_aws):
    with Pipeline.create() as pipeline:
        run = _run_once(pipeline)
        assert _stored_result(pipeline, run.id).keys() == {"location", "sha256", "bytes"}  # the item as it was
        pipeline.calls.clear()
        assert pipeline.services.queries.get_result(TENANT, run.id) == PAYLOAD
        assert [(service, op) for service, op, _ in pipeline.calls.calls] == [
            ("dynamodb", "GetItem"),
            ("s3", "GetObject"),
        ]
        assert not [key for key in pipeline.services.clients._clients if "@" in key]


@pytest.mark.parametrize("west_answers_at_first", [True, False])
def test_a_run_taken_over_in_another_region_records_the_result_its_first_attempt_wrote_there_not_running_again(
    knowing_both: Pipeline, west_answers_at_first: bool
) -> None:
    # us-west-2's executor ran the handler and wrote its result to its own bucket, then died before recording the
    # outcome; us-east-1's executor takes the run over when the lease ends (an MRSC table: one run, any region).
    p = knowing_both
    job = p.create_job(schedule={"at": START + FAR}, payload=PAYLOAD)
    p.clock.advance(FAR.total_seconds())
    p.tick()
    run_id = run_id_for(job.id, START + FAR)
    p.services.store.leases.lease_run(run_id, owner="west", now=p.clock.now(), lease_for=timedelta(seconds=30))
    first = {"written": "in us-west-2"}
    west = ResultStore(boto3.client("s3", region_name=READ_IN), BUCKETS[READ_IN], region=READ_IN)
    west.write_once(p.run(run_id), first)
    p.clock.advance(60)  # the dead executor's lease ends
    west_events = p.services.clients.regional_client("s3", READ_IN).meta.events

    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url=f"https://s3.{READ_IN}.amazonaws.com")

    if not west_answers_at_first:
        west_events.register("before-send.s3.HeadObject", unreachable)
        p.tick()
        with pytest.raises(AssertionError, match="did not drain"):
            p.drain(max_rounds=3)  # its message comes back each time
        assert p.run(run_id).status is RunStatus.RUNNING  # not run again while its result may be there
        assert p.services.results.find(p.run(run_id)) is None
        west_events.unregister("before-send.s3.HeadObject", unreachable)
        p.clock.advance(120)  # the lease of the executor that could not look ends
    p.tick()  # the run sent again
    p.drain()
    run = p.run(run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.result is not None
    assert run.result.region == READ_IN
    assert p.services.result_reads.read(run) == first  # its first attempt's, not a second run's


def test_a_checkpoint_written_by_an_attempt_in_another_region_is_read_there_by_the_attempt_resuming_it(
    knowing_both: Pipeline,
) -> None:
    # A durable run's checkpoint too large for its item is an object in the bucket of the region whose attempt saved
    # it; the run item names only its key, and the next attempt (a takeover, a retry, a yield's next segment) may be
    # another region's.
    p = knowing_both
    key = f"checkpoints/{TENANT}/j/r/00000001-writer.json"
    p.services.results.write_checkpoint(key, json.dumps({"page": 2}).encode())
    west = _api_in(READ_IN, p, CallLog())
    assert west.results.read_checkpoint(key) == {"page": 2}
    with pytest.raises(ClientError):
        west.results.read_checkpoint(f"checkpoints/{TENANT}/j/r/00000002-writer.json")  # in no region
