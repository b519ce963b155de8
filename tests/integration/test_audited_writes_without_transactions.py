"""Audited writes without transactions (RegionMode strong, tickwork.store.pending_audits), in moto through the real
client: a request that dies between any two of an audited write's requests leaves its item and the audit listing
agreeing (the change happened with its one confirmed record listed, or did not with none), and the next audited
write on the item succeeds; racing audited writes make one change and one record; the active jobs counter, counted
without a transaction, is never too low."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from tickwork.model.audit import Actor, ActorKind, Attribution, AuditResource, audit_record
from tickwork.model.audit_settlement import SETTLES_AFTER
from tickwork.model.clock import to_ms
from tickwork.store.audit import AuditItems, AuditOutbox
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.pending_audits import MARKER, NOT_HAPPENED_KIND, PENDING_KIND

from tests.faults.crashes import ProcessKilled
from tests.harness import TENANT, Pipeline
from tests.integration.test_expiry_sweep import STRONG

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

BY = Attribution(actor=Actor(kind=ActorKind.IAM, id="arn:aws:sts::123456789012:assumed-role/r/alice", display="r/a"))
WRITES = ("PutItem", "UpdateItem", "DeleteItem")


@pytest.fixture
def pipeline(mocked_aws: None) -> Iterator[Any]:
    with Pipeline.create(parameters=STRONG) as p:
        yield p


@contextmanager
def dying_before_write(pipeline: Any, nth: int) -> Iterator[list[str]]:
    """The process dies as it is about to send its `nth` write from now (a botocore before-call handler on the real
    client: the request is never sent). Yields the writes sent."""
    client = pipeline.services.store.shared_table.client
    sent: list[str] = []

    def before_call(model: Any, **_: Any) -> None:
        if model.name not in WRITES:
            return
        if len(sent) + 1 == nth:
            raise ProcessKilled(f"before write {nth}")
        sent.append(model.name)

    client.meta.events.register("before-call.dynamodb", before_call)
    try:
        yield sent
    finally:
        client.meta.events.unregister("before-call.dynamodb", before_call)


def record(pipeline: Any, resource_id: str, action: str = "calendar.update") -> dict[str, Any]:
    made = audit_record(
        BY,
        tenant=TENANT,
        action=action,
        resource=AuditResource(kind="calendar", id=resource_id),
        at=pipeline.clock.now(),
    )
    return AuditItems().item(made)


def key(name: str) -> dict[str, Any]:
    return {"pk": {"S": f"TENANT#{TENANT}"}, "sk": {"S": f"THING#{name}"}}


def item_of(pipeline: Any, name: str) -> dict[str, Any] | None:
    return item_of_key(pipeline, key(name))


def item_of_key(pipeline: Any, item_key: dict[str, Any]) -> dict[str, Any] | None:
    table = pipeline.services.store.shared_table
    found = table.client.get_item(TableName=table.name, Key=item_key, ConsistentRead=True).get("Item")
    return deserialize(found) if found else None


def listed(pipeline: Any) -> list[tuple[str, str]]:
    """The tenant's records the listing shows, and every tenant's (an admin's), as (action, resource id)."""
    now = pipeline.clock.now()
    window = {"from_ms": to_ms(now - timedelta(days=1)), "to_ms": to_ms(now + timedelta(days=1))}
    listings = pipeline.services.listings
    own = [(r.action, r.resource.id) for r in listings.list_audit(TENANT, limit=100, **window).items]
    every = [(r.action, r.resource.id) for r in listings.list_audit(None, limit=100, **window).items]
    assert own == every
    return own


def archivable(pipeline: Any) -> list[str]:
    """The resources of the records the tick's archive would take now (its due-index partition)."""
    outbox = AuditOutbox(pipeline.services.store.shared_table, retention=timedelta(days=1))
    return [json.loads(p.record)["resource"]["id"] for p in outbox.pending(pipeline.clock.now(), limit=100)]


def pending_records(pipeline: Any) -> list[dict[str, Any]]:
    table = pipeline.services.store.shared_table
    items = table.client.scan(TableName=table.name)["Items"]
    return [i for i in items if i.get("kind") == {"S": PENDING_KIND}]


# Each audited write: how to make its item's state before it, the write, and whether its change shows on the item.
def put_new(pipeline: Any, name: str) -> Callable[[], bool]:
    item = serialize({"pk": f"TENANT#{TENANT}", "sk": f"THING#{name}", "v": 1})
    table = pipeline.services.store.shared_table
    return lambda: table.put_if_absent(item, return_old=False, audit=record(pipeline, name, "calendar.create"))[0]


def update(pipeline: Any, name: str) -> Callable[[], bool]:
    table = pipeline.services.store.shared_table
    table.client.put_item(
        TableName=table.name, Item=serialize({"pk": f"TENANT#{TENANT}", "sk": f"THING#{name}", "v": 1})
    )
    values = expression_values(v=2, old=1)
    return lambda: table.update_if(key(name), "SET v = :v", "v = :old", None, values, audit=record(pipeline, name))


def delete(pipeline: Any, name: str) -> Callable[[], bool]:
    table = pipeline.services.store.shared_table
    table.client.put_item(
        TableName=table.name, Item=serialize({"pk": f"TENANT#{TENANT}", "sk": f"THING#{name}", "v": 1})
    )
    values = expression_values(old=1)
    return lambda: table.delete_if(key(name), "v = :old", None, values, audit=record(pipeline, name, "calendar.delete"))


CHANGES: dict[str, tuple[Callable[[Any, str], Callable[[], bool]], Callable[[dict[str, Any] | None], bool], int]] = {
    # (the write, whether the item shows it, how many writes it sends)
    "put": (put_new, lambda item: item is not None, 4),
    "update": (update, lambda item: item is not None and item["v"] == 2, 4),
    "delete": (delete, lambda item: item is None, 5),
}


def next_write(pipeline: Any, name: str, *, tries: int = 2) -> bool:
    """Another audited change of the item, whatever its state: a put where it is gone, an update where it is; read
    and tried again once if it lost, as the callers do (a marked item read before a delete it was marked for)."""
    table = pipeline.services.store.shared_table
    for _ in range(tries):
        audit = record(pipeline, name, "calendar.replace")
        if item_of(pipeline, name) is None:
            item = serialize({"pk": f"TENANT#{TENANT}", "sk": f"THING#{name}", "v": 9})
            won, _ = table.put_if_absent(item, return_old=False, audit=audit)
        else:
            values = expression_values(v=9)
            won = table.update_if(key(name), "SET v = :v", "attribute_exists(pk)", None, values, audit=audit)
        if won:
            return True
    return False


@pytest.mark.parametrize("settled_by", ["listing", "next write"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_request_dying_between_any_two_writes_leaves_the_item_and_the_listing_agreeing(
    pipeline: Any, change: str, settled_by: str
) -> None:
    prepare, shows, writes = CHANGES[change]
    for nth in range(1, writes + 1):
        name = f"{change}-{nth}"
        write = prepare(pipeline, name)
        before = item_of(pipeline, name)
        with dying_before_write(pipeline, nth) as sent, pytest.raises(ProcessKilled):
            write()
        assert len(sent) == nth - 1
        confirmed = nth > writes - (0 if change == "delete" else 1)  # the confirm is the last write but the clear
        assert bool(pending_records(pipeline)) == (nth > 1 and not confirmed)
        assert bool([r for r in listed(pipeline) if r[1] == name]) == confirmed, "a pending record is listed"

        pipeline.clock.advance(SETTLES_AFTER.total_seconds() + 1)
        assert (name in archivable(pipeline)) == confirmed, "a pending record would be archived"
        if settled_by == "listing":
            records = [r for r in listed(pipeline) if r[1] == name]
        after = item_of(pipeline, name)
        happened = shows(after) or MARKER in (after or {})  # marked: the change is decided (a delete then finishes)
        assert happened or after == before, "the item changed without its record being confirmed"
        assert next_write(pipeline, name), f"the next audited write after a death before write {nth} lost"
        if settled_by != "listing":
            records = [r for r in listed(pipeline) if r[1] == name][1:]  # newest first: the next write's, then
        assert [r[0] for r in records] == ([f"calendar.{change_action(change)}"] if happened else []), nth
        shown = [r for r in listed(pipeline) if r[1] == name]  # the next write's record too
        assert archivable(pipeline).count(name) == len(shown), "the archive takes what the listing shows"
        assert (item_of(pipeline, name) or {}).get(MARKER) is None
        assert not pending_records(pipeline)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_tick_settles_what_a_dead_request_left_when_nobody_writes_the_item_or_lists_the_audit(
    pipeline: Any, change: str
) -> None:
    prepare, shows, writes = CHANGES[change]
    for nth in range(2, writes + 1):
        name = f"{change}-{nth}"
        write = prepare(pipeline, name)
        with dying_before_write(pipeline, nth), pytest.raises(ProcessKilled):
            write()
        pipeline.clock.advance(SETTLES_AFTER.total_seconds() + 1)
        report = pipeline.tick()
        assert not pending_records(pipeline), nth
        after = item_of(pipeline, name)
        cleared_last = nth == writes and change != "delete"  # confirmed, the mark left: the next write clears it
        assert cleared_last or MARKER not in (after or {}), nth
        happened = shows(after)
        assert report["pending_audits_settled"] == (1 if nth < writes or change == "delete" else 0), nth
        assert [r[0] for r in listed(pipeline) if r[1] == name] == (
            [f"calendar.{change_action(change)}"] if happened else []
        ), nth


def change_action(change: str) -> str:
    return {"put": "create", "update": "update", "delete": "delete"}[change]


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_write_that_completes_sends_its_writes_and_leaves_one_confirmed_record(pipeline: Any, change: str) -> None:
    prepare, shows, writes = CHANGES[change]
    write = prepare(pipeline, change)
    pipeline.calls.clear()
    assert write()
    sent = [op for op in (c[1] for c in pipeline.calls.calls) if op in WRITES]
    assert len(sent) == writes
    assert pipeline.calls.count("TransactWriteItems") == 0
    assert shows(item_of(pipeline, change))
    assert listed(pipeline) == [(f"calendar.{change_action(change)}", change)]
    assert not pending_records(pipeline)


def test_a_mark_whose_record_is_young_fails_the_next_write_as_a_conflicting_write(pipeline: Any) -> None:
    write = update(pipeline, "young")
    with dying_before_write(pipeline, 3), pytest.raises(ProcessKilled):
        write()  # changed and marked, never confirmed
    assert not next_write(pipeline, "young", tries=1)
    assert item_of(pipeline, "young")["v"] == 2  # type: ignore[index]
    assert listed(pipeline) == []
    assert len(pending_records(pipeline)) == 1  # the losing write's own record is gone

    pipeline.clock.advance(SETTLES_AFTER.total_seconds() + 1)
    assert next_write(pipeline, "young")
    assert listed(pipeline) == [("calendar.replace", "young"), ("calendar.update", "young")]


def test_racing_audited_writes_on_one_item_make_one_change_and_one_record(pipeline: Any) -> None:
    table = pipeline.services.store.shared_table
    table.client.put_item(TableName=table.name, Item=serialize({"pk": f"TENANT#{TENANT}", "sk": "THING#raced", "v": 1}))

    def attempt(value: int) -> bool:
        audit = record(pipeline, f"raced-{value}")
        values = expression_values(v=value, old=1)
        return table.update_if(key("raced"), "SET v = :v", "v = :old", None, values, audit=audit)

    # One write lands between the other's change and its confirm: it finds the change's mark (its record young).
    client = table.client
    inner: list[bool] = []

    def before_confirm(params: dict[str, Any], **_: Any) -> None:
        if params.get("UpdateExpression", "").startswith("REMOVE pending") and not inner:
            inner.append(attempt(3))

    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", before_confirm)
    try:
        assert attempt(2)
    finally:
        client.meta.events.unregister("before-parameter-build.dynamodb.UpdateItem", before_confirm)
    assert inner == [False]
    assert item_of(pipeline, "raced")["v"] == 2  # type: ignore[index]

    # Then writes at once from threads, each on the version it read: one wins.
    won: list[bool] = []
    threads = [threading.Thread(target=lambda v=v: won.append(race(pipeline, v))) for v in range(10, 14)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False, False, False, True]
    assert [r[1] for r in listed(pipeline)].count("raced-2") == 1
    assert len([r for r in listed(pipeline) if r[1].startswith("raced-1")]) == 1
    assert not pending_records(pipeline)
    assert MARKER not in (item_of(pipeline, "raced") or {})


def race(pipeline: Any, value: int) -> bool:
    table = pipeline.services.store.shared_table
    values = expression_values(v=value, old=2)
    return table.update_if(
        key("raced"), "SET v = :v", "v = :old", None, values, audit=record(pipeline, f"raced-{value}")
    )


@pytest.mark.parametrize("dies_before", [1, 2])
def test_counting_a_job_in_without_a_transaction_over_counts_by_at_most_one(pipeline: Any, dies_before: int) -> None:
    tenants = pipeline.services.tenant_records
    job = pipeline.create_job(schedule={"rate": "1 hour"})
    with dying_before_write(pipeline, dies_before), pytest.raises(ProcessKilled):
        tenants.count_in(TENANT, job.id)
    counted = int(tenants.get_settings_and_usage(TENANT)[1].get("active_jobs", 0))
    assert counted == dies_before - 1  # before the count: none; between the count and the mark: one too many
    assert tenants.count_in(TENANT, job.id)
    assert int(tenants.get_settings_and_usage(TENANT)[1]["active_jobs"]) == dies_before
    assert not tenants.count_in(TENANT, job.id)  # counted already: the count released
    assert int(tenants.get_settings_and_usage(TENANT)[1]["active_jobs"]) == dies_before
    assert pipeline.calls.count("TransactWriteItems") == 0


def test_an_audited_change_that_sets_an_expiry_marks_its_bucket_once(pipeline: Any) -> None:
    # Its writes pass through the table twice (the audited write, then each of its own): the bucket is set once.
    table = pipeline.services.store.shared_table
    update(pipeline, "expiring")  # the item, at v 1
    expires = int(pipeline.clock.now().timestamp()) + 3600
    values = expression_values(v=2, old=1, e=expires)
    assert table.update_if(
        key("expiring"), "SET v = :v, expires_at = :e", "v = :old", None, values, audit=record(pipeline, "expiring")
    )
    item = item_of(pipeline, "expiring")
    assert item is not None
    assert (item["v"], item["expires_at"]) == (2, expires)
    assert str(item["expiry_bucket"]).startswith("X#")
    assert listed(pipeline) == [("calendar.update", "expiring")]


def test_a_record_settled_as_not_happened_is_swept_a_day_later_and_a_confirmed_one_is_archived_once(
    pipeline: Any,
) -> None:
    table = pipeline.services.store.shared_table
    write = update(pipeline, "kept")  # the item at v 1
    with dying_before_write(pipeline, 2), pytest.raises(ProcessKilled):
        write()  # its record pending, its change never sent
    (pending,) = pending_records(pipeline)
    assert "expires_at" not in pending  # kept until it is settled, however long that takes
    lost = table.update_if(
        key("kept"), "SET v = :v", "v = :old", None, expression_values(v=3, old=7), audit=record(pipeline, "lost")
    )
    assert not lost
    assert write()  # the change, again: its own record confirmed
    pipeline.clock.advance(SETTLES_AFTER.total_seconds() + 1)
    first = pipeline.services.minute_tick.run()
    assert (first.pending_audits_settled, first.audit_archived) == (1, 1)  # the dead request's: not happened
    assert pipeline.services.minute_tick.run().audit_archived == 0  # the confirmed one archived once
    items = table.client.scan(TableName=table.name)["Items"]
    settled = [i for i in items if i.get("kind") == {"S": NOT_HAPPENED_KIND}]
    assert len(settled) == 2
    assert all("expiry_bucket" in i for i in settled)

    pipeline.clock.advance(timedelta(days=1, hours=2).total_seconds())
    pipeline.tick()
    items = table.client.scan(TableName=table.name)["Items"]
    assert not [i for i in items if i.get("kind") == {"S": NOT_HAPPENED_KIND}]
    assert not pending_records(pipeline)
    confirmed = [i for i in items if i.get("kind") == {"S": "AUDIT"}]
    assert [i["resource_id"]["S"] for i in confirmed] == ["kept"]  # kept for its retention, archived


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_sent_again_after_its_answer_was_lost_is_the_change_that_happened(pipeline: Any, change: str) -> None:
    # The SDK sends a write again when its answer is lost (a timeout, a connection reset after DynamoDB applied it):
    # the write sent again then finds the item carrying its own mark, and its condition fails.
    prepare, shows, _ = CHANGES[change]
    write = prepare(pipeline, change)
    client = pipeline.services.store.shared_table.client
    applied: list[str] = []

    def applied_before(params: dict[str, Any], model: Any, **_: Any) -> None:
        marking = MARKER in params.get("Item", {}) or f"{MARKER} = :audit_marker" in params.get("UpdateExpression", "")
        if marking and not applied:
            applied.append(model.name)
            getattr(client, {"PutItem": "put_item", "UpdateItem": "update_item"}[model.name])(**dict(params))

    for operation in ("PutItem", "UpdateItem"):
        client.meta.events.register(f"before-parameter-build.dynamodb.{operation}", applied_before)
    try:
        assert write()
    finally:
        for operation in ("PutItem", "UpdateItem"):
            client.meta.events.unregister(f"before-parameter-build.dynamodb.{operation}", applied_before)
    assert applied
    assert shows(item_of(pipeline, change))
    assert listed(pipeline) == [(f"calendar.{change_action(change)}", change)]
    assert MARKER not in (item_of(pipeline, change) or {})
    assert not pending_records(pipeline)


def test_a_delete_sent_again_after_its_answer_was_lost_is_the_delete_that_happened(pipeline: Any) -> None:
    write = delete(pipeline, "deleted")
    client = pipeline.services.store.shared_table.client
    applied: list[bool] = []

    def applied_before(params: dict[str, Any], **_: Any) -> None:
        if not applied:
            applied.append(True)
            client.delete_item(**dict(params))

    client.meta.events.register("before-parameter-build.dynamodb.DeleteItem", applied_before)
    try:
        assert write()
    finally:
        client.meta.events.unregister("before-parameter-build.dynamodb.DeleteItem", applied_before)
    assert applied
    assert item_of(pipeline, "deleted") is None
    assert listed(pipeline) == [("calendar.delete", "deleted")]
    assert not pending_records(pipeline)


def test_counting_a_job_in_whose_mark_was_sent_again_after_its_answer_was_lost_counts_it_once(pipeline: Any) -> None:
    tenants = pipeline.services.tenant_records
    job = pipeline.create_job(schedule={"rate": "1 hour"})
    client = pipeline.services.store.shared_table.client
    applied: list[bool] = []

    def applied_before(params: dict[str, Any], **_: Any) -> None:
        if params.get("UpdateExpression", "").startswith("SET #counted = :tenant") and not applied:
            applied.append(True)
            client.update_item(**dict(params))

    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", applied_before)
    try:
        assert tenants.count_in(TENANT, job.id)
    finally:
        client.meta.events.unregister("before-parameter-build.dynamodb.UpdateItem", applied_before)
    assert applied
    assert int(tenants.get_settings_and_usage(TENANT)[1]["active_jobs"]) == 1  # never below the jobs counted
    assert not tenants.count_in(TENANT, job.id)  # another count of it (a racing recount) is released
    assert int(tenants.get_settings_and_usage(TENANT)[1]["active_jobs"]) == 1
