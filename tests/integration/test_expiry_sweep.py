"""Expiry without TTL (RegionMode strong, docs/regions.md) through the real pipeline on moto, the table made as the
template makes it in strong (with its expiry index): every item written with `expires_at` carries its bucket; the
tick deletes what has expired, within its budget, moving its cursor only past empty hours; an item whose expiry
was moved on or removed survives; a sweep that fails never fails the tick. In single mode nothing of it exists:
no bucket is written and the tick sends no sweep request."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from tickwork.control.api_bodies import JobSpec, TriggerRequest, WorkflowSpec
from tickwork.control.callers import Caller
from tickwork.model.audit import Actor, ActorKind, Attribution
from tickwork.model.expiry import EXPIRY_INDEX, SWEEP_LAG, SweepBudget, expiry_bucket, expiry_hour
from tickwork.model.freezes import FreezeSpec
from tickwork.model.states import RunStatus
from tickwork.store import ExpiredItems, serialize
from tickwork.store.expiry import CURSOR_KEY
from tickwork.tick import expiry_sweep
from tickwork.tick.expiry_sweep import ExpirySweep

from tests.harness import START, TENANT, Pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

# The stack in strong as the template deploys it; its table keeps the local name (one table, as MRSC's is one).
STRONG = {
    "RegionMode": "strong",
    "GlobalTableName": "tickwork-JobsTable",
    "GlobalTableRegions": "us-east-1,us-east-2",
    "WitnessRegion": "us-west-2",
}
FAR = timedelta(minutes=10)
OPS = Attribution(actor=Actor(kind=ActorKind.IAM, id="arn:aws:sts::123456789012:assumed-role/ops/o", display="ops"))
HOUR = timedelta(hours=1)


@pytest.fixture
def strong(mocked_aws: None) -> Iterator[Pipeline]:
    # A day's retention, so that the runs expire within the test's two days.
    with Pipeline.create(parameters=STRONG, RUN_RETENTION_DAYS="1", AUDIT_RETENTION_DAYS="1") as pipeline:
        assert pipeline.services.settings.region_mode == "strong"
        yield pipeline


def _items(pipeline: Pipeline) -> list[dict[str, Any]]:
    """Every item of the table (a test-only Scan: the product never scans)."""
    db = pipeline.services.clients.client("dynamodb")
    pages = db.get_paginator("scan").paginate(TableName=pipeline.services.settings.table_name)
    return [item for page in pages for item in page["Items"]]


def _expiring(pipeline: Pipeline) -> list[dict[str, Any]]:
    return [item for item in _items(pipeline) if "expires_at" in item]


def _kind(item: dict[str, Any]) -> str:
    """What an expiring item is, by its key's prefix."""
    pk, sk = item["pk"]["S"], item["sk"]["S"]
    partition, sort = pk.split("#")[0], sk.split("#")[0]
    return partition if sort.isdigit() else f"{partition}/{sort}"  # an audit record's sort key is its time


def _workload(pipeline: Pipeline) -> set[str]:
    """Runs that end (one under a deadline, a concurrency key and an ordering key), an idempotent create, a debounced
    trigger and a freeze lifted: each writes an item that expires. The kinds of expiring item it left."""
    at = {"at": START + FAR}
    pipeline.create_job(name="plain", schedule=at)
    pipeline.create_job(name="deadline", schedule=at, deadline={"within_seconds": 600, "on_miss": "ALERT"})
    pipeline.create_job(name="limited", schedule=at, concurrency={"key": "stripe", "limit": 1})
    pipeline.create_job(name="ordered", schedule=at, ordering={"key": "ledger"})
    keyed = JobSpec.model_validate({"name": "keyed", "type": "echo", "schedule": {"cron": "0 0 1 1 *"}})
    pipeline.services.idempotent_create.create_job_once(TENANT, keyed, key="expiry-key", request_hash="h")
    job = pipeline.create_job(name="debounced", schedule={"cron": "0 0 1 1 *"})
    debounce = TriggerRequest.model_validate({"debounce": {"key": "k", "seconds": 30}})
    pipeline.services.jobs.trigger(TENANT, job.id, debounce)
    steps = [{"id": "a", "type": "echo"}, {"id": "b", "type": "echo", "depends_on": ["a"]}]
    workflow = {"name": "wf", "schedule": {"at": START + FAR}, "steps": steps}
    pipeline.services.workflows.create(TENANT, WorkflowSpec.model_validate(workflow))
    body = {"selector": {"tags": {"team": "x"}}, "for_seconds": 60, "reason": "expiry test"}
    freeze = pipeline.services.freezes.create(Caller(TENANT), FreezeSpec.model_validate(body), by=OPS)
    pipeline.services.freezes.lift(Caller(TENANT), freeze.id, by=OPS)
    pipeline.clock.advance(FAR.total_seconds() + 60)
    pipeline.tick()
    pipeline.drain()
    pipeline.tick()  # the workflow's second step; the audit records archived
    pipeline.drain()
    for item in _items(pipeline):
        if item.get("kind", {}).get("S") == "RUN":
            assert item["status"]["S"] == RunStatus.SUCCEEDED, item
    return {_kind(item) for item in _expiring(pipeline)}


def _assert_every_expiring_item_has_its_bucket(pipeline: Pipeline) -> None:
    for item in _items(pipeline):
        if "expires_at" in item:
            want = expiry_bucket(item["pk"]["S"], item["sk"]["S"], int(item["expires_at"]["N"]))
            assert item.get("expiry_bucket") == {"S": want}, item
        else:
            assert "expiry_bucket" not in item, item


def test_in_strong_every_item_that_expires_carries_its_bucket_and_the_tick_deletes_it_once_expired(strong):
    pipeline = strong
    kinds = _workload(pipeline)
    # Runs (a workflow's too), debounce windows, deadlines, idempotency keys, limit holders, ordering entries, a
    # lifted freeze, audit records archived.
    want = {"JOB/RUN", "JOB/STEP", "JOB/DEBOUNCE", "JOB/DEADLINE", "IDEM/IDEM", "TENANT/LIMIT", "TENANT/ORDER"}
    want |= {"FREEZES/FREEZE", "AUDIT"}
    assert want <= kinds, kinds
    _assert_every_expiring_item_has_its_bucket(pipeline)

    # Past every expiry but the ordering entries' (35 days): two days of hours, a tick's budget of 48 of them.
    pipeline.clock.advance(timedelta(days=2, hours=2).total_seconds())
    deleted = sum(pipeline.services.minute_tick.run().expired_deleted for _ in range(3))
    left = {_kind(item) for item in _expiring(pipeline)}
    assert left == {"TENANT/ORDER"}, left
    assert deleted >= 10
    cursor = ExpiredItems(pipeline.services.store.shared_table).swept_before()
    assert cursor == expiry_hour(int(pipeline.clock.now().timestamp()))  # caught up: now's hour
    # Nothing else went: the jobs, the tenant's items without an expiry.
    assert {item["sk"]["S"] for item in _items(pipeline) if item["pk"]["S"].startswith("JOB#")} == {"JOB"}


def _put_expiring(pipeline: Pipeline, name: str, expires_at: datetime) -> dict[str, Any]:
    """An item written a minute before it expires (or now, if that is later), the clock then as it was."""
    key = {"pk": {"S": f"TEST#{name}"}, "sk": {"S": "X"}}
    now = pipeline.clock.now()
    pipeline.clock.set(min(now, expires_at - timedelta(minutes=1)))
    pipeline.services.store.shared_table.put(
        serialize({"pk": f"TEST#{name}", "sk": "X", "expires_at": int(expires_at.timestamp())})
    )
    pipeline.clock.set(now)
    return key


def _exists(pipeline: Pipeline, key: dict[str, Any]) -> bool:
    db = pipeline.services.clients.client("dynamodb")
    return "Item" in db.get_item(TableName=pipeline.services.settings.table_name, Key=key)


def _sweep(pipeline: Pipeline, budget: SweepBudget, **kwargs: Any) -> ExpirySweep:
    return ExpirySweep(ExpiredItems(pipeline.services.store.shared_table), pipeline.clock, budget, **kwargs)


def test_the_budget_holds_across_ticks_and_the_cursor_passes_only_empty_hours(strong):
    pipeline = strong
    now = pipeline.clock.now()
    first = now - 5 * HOUR
    early = [_put_expiring(pipeline, f"early{i}", first + timedelta(minutes=i)) for i in range(3)]
    late = _put_expiring(pipeline, "late", first + 2 * HOUR)
    items = ExpiredItems(pipeline.services.store.shared_table)
    assert items.move_cursor(None, expiry_hour(int(first.timestamp())))
    start = items.swept_before()
    sweep = _sweep(pipeline, SweepBudget(deletes=2))

    assert sweep.sweep() == 2  # the budget: two of the first hour's three
    assert sum(_exists(pipeline, key) for key in early) == 1
    assert _exists(pipeline, late)
    assert items.swept_before() == start  # the hour is not known to be empty

    assert sweep.sweep() == 2  # the third, and the later hour's one
    assert not any(_exists(pipeline, key) for key in [*early, late])
    assert items.swept_before() == start  # the first hour held one: read once more before it is passed

    assert sweep.sweep() == 0
    # Every hour ended SWEEP_LAG before now found empty (the one just ended may still be filling).
    assert items.swept_before() == expiry_hour(int((now - SWEEP_LAG).timestamp()))


def test_the_time_budget_stops_a_sweep_and_the_next_goes_on(strong):
    pipeline = strong
    first = pipeline.clock.now() - 3 * HOUR
    keys = [_put_expiring(pipeline, f"item{i}", first) for i in range(4)]
    items = ExpiredItems(pipeline.services.store.shared_table)
    items.move_cursor(None, expiry_hour(int(first.timestamp())))
    elapsed = iter(range(0, 1000, 4))  # each look at the timer: 4 s later; out of 10 s by its fourth look
    stopped = _sweep(pipeline, SweepBudget(seconds=10.0), timer=lambda: float(next(elapsed))).sweep()
    assert stopped < len(keys)
    assert sum(_exists(pipeline, key) for key in keys) == len(keys) - stopped
    assert items.swept_before() == expiry_hour(int(first.timestamp()))  # the hour was not read to its end
    assert _sweep(pipeline, SweepBudget()).sweep() == len(keys) - stopped  # the next goes on
    assert not any(_exists(pipeline, key) for key in keys)


def test_an_item_whose_expiry_moved_on_or_was_removed_survives(strong):
    pipeline = strong
    table = pipeline.services.store.shared_table
    first = pipeline.clock.now() - 3 * HOUR
    extended = _put_expiring(pipeline, "extended", first)
    removed = _put_expiring(pipeline, "removed", first)
    gone = _put_expiring(pipeline, "gone", first)
    ExpiredItems(table).move_cursor(None, expiry_hour(int(first.timestamp())))
    later = int((pipeline.clock.now() + timedelta(days=1)).timestamp())
    # Between the sweep's read of the index and its deletes (an index is eventually consistent): one item's
    # expiry is moved on, and another's removed.
    moved: list[str] = []

    def change_after_the_read(**_: Any) -> None:
        if moved:
            return
        moved.append("once")
        assert table.update_if(extended, "SET expires_at = :e", "attribute_exists(pk)", None, {":e": {"N": str(later)}})
        assert table.update_if(removed, "REMOVE expires_at", "expires_at < :e", None, {":e": {"N": str(later)}})

    events = table.client.meta.events
    events.register("after-call.dynamodb.Query", change_after_the_read)
    try:
        assert _sweep(pipeline, SweepBudget()).sweep() == 1
    finally:
        events.unregister("after-call.dynamodb.Query", change_after_the_read)
    assert _exists(pipeline, extended)
    assert _exists(pipeline, removed)
    assert not _exists(pipeline, gone)
    _assert_every_expiring_item_has_its_bucket(pipeline)  # the moved one's bucket moved; the removed one has none


def test_a_sweep_that_fails_never_fails_the_tick(strong, monkeypatch):
    pipeline = strong
    metrics: list[tuple[str, float]] = []
    monkeypatch.setattr(expiry_sweep.metrics, "add_metric", lambda name, unit, value: metrics.append((name, value)))
    expired = pipeline.clock.now() - 2 * HOUR
    key = _put_expiring(pipeline, "kept", expired)
    ExpiredItems(pipeline.services.store.shared_table).move_cursor(None, expiry_hour(int(expired.timestamp())))

    def refuse(params: dict[str, Any], **_: Any) -> None:
        if params.get("IndexName") == EXPIRY_INDEX:
            raise RuntimeError("the index is unreachable")

    events = pipeline.services.clients.client("dynamodb").meta.events
    events.register("provide-client-params.dynamodb.Query", refuse)
    try:
        report = pipeline.tick()
    finally:
        events.unregister("provide-client-params.dynamodb.Query", refuse)
    assert report["dispatched"] == 0
    assert ("ExpirySweepFailures", 1) in metrics
    assert _exists(pipeline, key)
    assert pipeline.services.minute_tick.run().expired_deleted == 1  # the next tick goes on
    assert ("ExpiredItemsDeleted", 1) in metrics


def test_in_single_mode_no_bucket_is_written_and_the_tick_sends_no_sweep_request(pipeline):
    assert pipeline.services.settings.region_mode == "single"
    assert pipeline.services.minute_tick.expiry_sweep is None
    _workload(pipeline)
    assert _expiring(pipeline)
    assert not [item for item in _items(pipeline) if "expiry_bucket" in item]
    pipeline.clock.advance(timedelta(days=40).total_seconds())
    pipeline.calls.clear()
    pipeline.tick()
    assert not pipeline.calls.count("DeleteItem")
    assert not [p for p in pipeline.calls.params("Query") if p.get("IndexName") == EXPIRY_INDEX]
    assert not [p for p in pipeline.calls.params("GetItem") if p["Key"] == CURSOR_KEY]
    assert not [p for p in pipeline.calls.params("UpdateItem") if p["Key"] == CURSOR_KEY]


def test_the_strong_table_is_made_with_the_expiry_index(strong):
    db = strong.services.clients.client("dynamodb")
    table = db.describe_table(TableName=strong.services.settings.table_name)["Table"]
    [index] = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == EXPIRY_INDEX]
    assert index["KeySchema"] == [
        {"AttributeName": "expiry_bucket", "KeyType": "HASH"},
        {"AttributeName": "expires_at", "KeyType": "RANGE"},
    ]
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}


@pytest.mark.parametrize("mode", ["single", "eventual"])
def test_where_ttl_expires_items_the_table_marks_nothing_and_the_tick_does_not_sweep(mocked_aws, mode):
    with Pipeline.create(REGION_MODE=mode) as pipeline:
        assert pipeline.services.store.shared_table.expiry is None
        assert pipeline.services.minute_tick.expiry_sweep is None
