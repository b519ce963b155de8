"""`Freeze Started` and `Freeze Ended` (docs/operations.md, "Run events") through the API's freeze service and the
real tick, on moto's EventBridge: each published once per fact, whether the API or racing ticks record it, and
published again by the tick (same `event_id`) when its writer died between the fact's write and the publish."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from tickwork.control.callers import Caller
from tickwork.faults import CrashPoint
from tickwork.model.errors import Conflict
from tickwork.model.freezes import FreezeSpec
from tickwork.store.freezes import freeze_key

from tests.faults.crashes import ProcessKilled
from tests.harness import START, TENANT
from tests.integration.test_deadlines_pipeline import racing_ticks
from tests.integration.test_run_events_pipeline import Consumer

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
MINUTE = timedelta(minutes=1)
OUTBOX_GRACE = timedelta(seconds=60)
ADMIN = Caller("ops", admin=True)


@pytest.fixture
def consumer(pipeline):
    return Consumer(pipeline.services.clients)


def _at(minute: int) -> datetime:
    return START + minute * MINUTE


def _freeze(pipeline: Any, caller: Caller = Caller(TENANT), **spec: Any) -> Any:
    body = {"selector": {"tags": {"team": "payments"}}, "for_seconds": 600, "reason": "deploy 1.42", **spec}
    return pipeline.services.freezes.create(caller, FreezeSpec.model_validate(body))


def _tick_at(pipeline: Any, at: datetime, *, racing: int = 2) -> None:
    pipeline.clock.advance((at - pipeline.clock.now()).total_seconds())
    racing_ticks(pipeline, racing)


def _published(consumer: Consumer) -> list[tuple[str, str]]:
    return [(e["detail-type"], e["detail"]["event_id"]) for e in consumer.events()]


def _freeze_item(pipeline: Any, freeze_id: str) -> dict[str, Any]:
    return pipeline.services.clients.client("dynamodb").get_item(
        TableName=pipeline.services.settings.table_name, Key=freeze_key(freeze_id)
    )["Item"]


def test_a_freeze_starting_now_publishes_started_at_its_creation_and_ended_at_its_until_once(pipeline, consumer):
    freeze = _freeze(pipeline)  # 12:00 to 12:10
    assert _published(consumer) == [("Freeze Started", f"{freeze.id}#freeze-started#0")]
    started = consumer.events()[0]
    assert started["source"] == "tickwork"
    assert started["detail"] == {
        "event_id": f"{freeze.id}#freeze-started#0",
        "freeze_id": freeze.id,
        "tenant": TENANT,
        "at": "2026-11-21T12:00:00.000Z",
        "selector": {"tags": {"team": "payments"}, "job_ids": None, "all": None},
        "from": "2026-11-21T12:00:00.000Z",
        "until": "2026-11-21T12:10:00.000Z",
        "reason": "deploy 1.42",
        "on_blocked": "SKIP",
        "created_at": "2026-11-21T12:00:00.000Z",
        "lifted_at": None,
        "lifted_by": None,
    }
    for minute in range(1, 13):
        _tick_at(pipeline, _at(minute))
    _tick_at(pipeline, _at(20))
    assert _published(consumer) == [
        ("Freeze Started", f"{freeze.id}#freeze-started#0"),
        ("Freeze Ended", f"{freeze.id}#freeze-ended#0"),
    ]
    ended = consumer.events()[1]["detail"]
    assert (ended["at"], ended["lifted_at"], ended["lifted_by"]) == ("2026-11-21T12:10:00.000Z", None, None)
    assert "ended_event_due" not in _freeze_item(pipeline, freeze.id)  # published: out of the outbox


def test_a_freeze_created_for_later_publishes_started_when_racing_ticks_see_it_start(pipeline, consumer):
    freeze = _freeze(pipeline, **{"from": _at(3).isoformat(), "for_seconds": 120})
    assert consumer.events() == []
    _tick_at(pipeline, _at(1))
    _tick_at(pipeline, _at(2) + timedelta(seconds=59))
    assert consumer.events() == []
    _tick_at(pipeline, _at(3))
    _tick_at(pipeline, _at(4))
    assert _published(consumer) == [("Freeze Started", f"{freeze.id}#freeze-started#0")]
    assert consumer.events()[0]["detail"]["at"] == "2026-11-21T12:03:00.000Z"
    _tick_at(pipeline, _at(5), racing=3)
    _tick_at(pipeline, _at(6))
    assert [kind for kind, _ in _published(consumer)] == ["Freeze Started", "Freeze Ended"]


def test_a_freeze_lifted_early_publishes_ended_once_and_the_tick_no_second_ended_at_its_until(pipeline, consumer):
    freeze = _freeze(pipeline)  # 12:00 to 12:10
    _tick_at(pipeline, _at(4))
    pipeline.services.freezes.lift(Caller(TENANT), freeze.id)
    assert _published(consumer) == [
        ("Freeze Started", f"{freeze.id}#freeze-started#0"),
        ("Freeze Ended", f"{freeze.id}#freeze-ended#0"),
    ]
    ended = consumer.events()[1]["detail"]
    assert (ended["at"], ended["lifted_at"], ended["lifted_by"]) == (
        "2026-11-21T12:04:00.000Z",
        "2026-11-21T12:04:00.000Z",
        TENANT,
    )
    for minute in (5, 10, 11, 30):
        _tick_at(pipeline, _at(minute))
    assert len(consumer.events()) == 2


def test_a_freeze_lifted_before_it_starts_publishes_nothing(pipeline, consumer):
    freeze = _freeze(pipeline, **{"from": _at(5).isoformat()})
    _tick_at(pipeline, _at(2))
    pipeline.services.freezes.lift(Caller(TENANT), freeze.id)
    for minute in (5, 6, 20):
        _tick_at(pipeline, _at(minute))
    assert consumer.events() == []


def test_a_freeze_started_unseen_by_a_tick_and_lifted_publishes_started_then_ended(pipeline, consumer):
    freeze = _freeze(pipeline, **{"from": _at(2).isoformat()})
    pipeline.clock.advance(3 * 60)  # started at 12:02; no tick since
    pipeline.services.freezes.lift(Caller(TENANT), freeze.id)
    _tick_at(pipeline, _at(5))
    assert [kind for kind, _ in _published(consumer)] == ["Freeze Started", "Freeze Ended"]


def test_a_lift_after_its_until_is_refused_and_records_its_own_end_once(pipeline, consumer):
    freeze = _freeze(pipeline, for_seconds=120)  # 12:00 to 12:02
    pipeline.clock.advance(3 * 60)  # no tick since its end
    with pytest.raises(Conflict):
        pipeline.services.freezes.lift(Caller(TENANT), freeze.id)
    _tick_at(pipeline, _at(5))
    assert [kind for kind, _ in _published(consumer)] == ["Freeze Started", "Freeze Ended"]
    ended = consumer.events()[1]["detail"]
    assert (ended["at"], ended["lifted_by"]) == ("2026-11-21T12:02:00.000Z", None)


def test_an_admin_s_freeze_of_every_tenant_names_no_tenant(pipeline, consumer):
    freeze = _freeze(pipeline, ADMIN, every_tenant=True)
    pipeline.services.freezes.lift(ADMIN, freeze.id)
    details = [e["detail"] for e in consumer.events()]
    assert [(d["tenant"], d["lifted_by"]) for d in details] == [(None, None), (None, "ops")]


def test_a_crash_between_a_freeze_s_start_and_its_publish_is_published_once_by_the_tick(pipeline, consumer):
    """The tick dies after recording the start, before publishing: the next ticks within the grace publish
    nothing (the writer may still be publishing); after it, racing ticks publish it once, with its one id."""
    freeze = _freeze(pipeline, **{"from": _at(2).isoformat()})
    pipeline.crashes.arm(CrashPoint.EVENTS_BEFORE_PUBLISH)
    pipeline.clock.advance(2 * 60)
    with pytest.raises(ProcessKilled):
        pipeline.tick()
    pipeline.crashes.disarm()
    assert consumer.events() == []
    assert "started_event_at" in _freeze_item(pipeline, freeze.id)  # the fact is recorded

    _tick_at(pipeline, _at(2) + timedelta(seconds=30))  # within the grace
    assert consumer.events() == []
    _tick_at(pipeline, _at(2) + OUTBOX_GRACE + timedelta(seconds=1), racing=3)
    _tick_at(pipeline, _at(5))
    assert _published(consumer) == [("Freeze Started", f"{freeze.id}#freeze-started#0")]
    assert "started_event_due" not in _freeze_item(pipeline, freeze.id)


def test_a_crash_between_a_freeze_s_creation_and_its_publish_is_published_once_by_the_tick(pipeline, consumer):
    pipeline.crashes.arm(CrashPoint.EVENTS_BEFORE_PUBLISH)
    with pytest.raises(ProcessKilled):
        _freeze(pipeline)
    pipeline.crashes.disarm()
    (freeze,) = pipeline.services.freezes.visible_to(Caller(TENANT))  # stored before the crash
    assert consumer.events() == []
    _tick_at(pipeline, _at(0) + timedelta(seconds=30))
    assert consumer.events() == []
    _tick_at(pipeline, _at(1) + timedelta(seconds=1))
    _tick_at(pipeline, _at(3))
    assert _published(consumer) == [("Freeze Started", f"{freeze.id}#freeze-started#0")]


def test_a_crash_between_a_lift_and_its_publish_is_published_once_by_the_tick(pipeline, consumer):
    freeze = _freeze(pipeline)
    _tick_at(pipeline, _at(4))
    pipeline.crashes.arm(CrashPoint.EVENTS_BEFORE_PUBLISH)
    with pytest.raises(ProcessKilled):
        pipeline.services.freezes.lift(Caller(TENANT), freeze.id)
    pipeline.crashes.disarm()
    assert pipeline.services.freezes.get(Caller(TENANT), freeze.id).lifted_at == _at(4)
    _tick_at(pipeline, _at(5) + timedelta(seconds=1))
    for minute in (6, 10, 11):
        _tick_at(pipeline, _at(minute))
    assert _published(consumer) == [
        ("Freeze Started", f"{freeze.id}#freeze-started#0"),
        ("Freeze Ended", f"{freeze.id}#freeze-ended#0"),
    ]
    assert consumer.events()[1]["detail"]["lifted_by"] == TENANT


def test_a_freeze_event_eventbridge_refused_is_published_by_a_later_tick(pipeline, consumer, monkeypatch):
    bus = pipeline.services.run_events.bus
    real = bus.publish
    monkeypatch.setattr(bus, "publish", lambda events: False)
    freeze = _freeze(pipeline)
    assert "started_event_due" in _freeze_item(pipeline, freeze.id)
    monkeypatch.setattr(bus, "publish", real)
    _tick_at(pipeline, _at(1) + timedelta(seconds=1))
    _tick_at(pipeline, _at(3))
    assert _published(consumer) == [("Freeze Started", f"{freeze.id}#freeze-started#0")]


def test_a_fanned_out_tick_records_a_freeze_s_start_in_one_slice_once(mocked_aws):
    from tests.harness import Pipeline

    with Pipeline.create(DISPATCH_WORKERS="2") as pipeline:
        consumer = Consumer(pipeline.services.clients)
        freeze = _freeze(pipeline, **{"from": _at(2).isoformat()})
        pipeline.create_job(schedule={"cron": "* * * * *"})  # something due in every tick
        for _ in range(3):  # 12:01 to 12:03
            pipeline.clock.advance(60)
            assert pipeline.tick()["slices_sent"] == 2
            assert pipeline.dispatch_all() == 2
        assert _published(consumer) == [("Freeze Started", f"{freeze.id}#freeze-started#0")]


def _freeze_queries(pipeline: Any) -> int:
    return sum(
        1 for p in pipeline.calls.params("Query") if p["ExpressionAttributeValues"].get(":pk") == {"S": "FREEZES"}
    )


def test_a_tick_reads_the_freezes_once_for_its_claim_and_their_events(pipeline, consumer):
    freeze = _freeze(pipeline, **{"from": _at(2).isoformat()})
    pipeline.create_job(schedule={"cron": "* * * * *"}, tags={"team": "payments"})
    pipeline.clock.advance(2 * 60)
    pipeline.calls.clear()
    pipeline.tick()  # a job due: the claim's read serves the events too
    assert _freeze_queries(pipeline) == 1
    assert _published(consumer) == [("Freeze Started", f"{freeze.id}#freeze-started#0")]


def test_a_tick_with_nothing_due_reads_the_freezes_once_for_their_events(pipeline, consumer):
    freeze = _freeze(pipeline, **{"from": _at(2).isoformat()})
    pipeline.clock.advance(2 * 60)
    pipeline.calls.clear()
    pipeline.tick()
    assert _freeze_queries(pipeline) == 1
    assert _published(consumer) == [("Freeze Started", f"{freeze.id}#freeze-started#0")]
