"""A pending redrive record's settlement (tickwork.model.redrive_intents, tickwork.tick.redrive_intents): the bands
whose move task SQS lists as started within the request's time confirm it, none marks it not happened; a failure to read or
settle one leaves it for the next tick and never stops the tick. No AWS: the intents and queues are stand-ins."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.model.audit import Actor, ActorKind, Attribution, AuditRecord, audit_record
from tickwork.model.clock import FakeClock
from tickwork.model.policies import Band
from tickwork.model.redrive_intents import (
    CLOCK_SKEW,
    REDRIVE_ACTION,
    REQUEST_BOUND,
    intended_bands,
    redrive_shown,
    settled,
    started_within,
)
from tickwork.store.audit import PendingIntent
from tickwork.tick.redrive_intents import RedriveIntents

T0 = datetime(2026, 11, 21, 12, tzinfo=UTC)
OPS = Attribution(actor=Actor(kind=ActorKind.IAM, id="arn:ops", display="ops"), request_id="r")


def _intent(*bands: Band, at: datetime = T0) -> AuditRecord:
    resource, changes = redrive_shown(bands)
    return audit_record(OPS, tenant="ops", action=REDRIVE_ACTION, resource=resource, at=at, changes=changes)


def test_a_move_started_within_the_requests_time_is_the_intents():
    intent = _intent(Band.HIGH, Band.LOW)
    assert intended_bands(intent) == [Band.HIGH, Band.LOW]
    edges = {
        Band.HIGH: [T0 - CLOCK_SKEW],  # SQS's clock a little behind the function's
        Band.LOW: [T0 + REQUEST_BOUND + CLOCK_SKEW],
    }
    assert started_within(intent, edges) == [Band.HIGH, Band.LOW]


def test_a_move_before_or_after_the_requests_time_or_of_another_band_is_not():
    intent = _intent(Band.LOW)
    late = T0 + REQUEST_BOUND + CLOCK_SKEW + timedelta(milliseconds=1)
    early = T0 - CLOCK_SKEW - timedelta(milliseconds=1)
    assert started_within(intent, {Band.LOW: [early, late], Band.HIGH: [T0]}) == []
    assert started_within(intent, {}) == []


def test_the_settled_record_names_what_started_and_keeps_the_rest():
    intent = _intent(Band.HIGH, Band.LOW)
    record = settled(intent, [Band.LOW])
    assert record is not None
    assert (record.resource.id, record.changes["started"].after) == ("low", ["low"])
    assert record.model_dump(exclude={"resource", "changes"}) == intent.model_dump(exclude={"resource", "changes"})
    assert settled(intent, []) is None


class Intents:
    def __init__(self, due: list[PendingIntent], *, unreadable: bool = False, failing: set[str] = frozenset()):
        self._due, self.unreadable, self.failing = due, unreadable, failing
        self.confirmed: list[AuditRecord] = []
        self.not_happened: list[str] = []

    def due(self, now: datetime, *, limit: int) -> list[PendingIntent]:
        if self.unreadable:
            raise ConnectionError("DynamoDB unreachable")
        return self._due

    def confirm(self, intent: PendingIntent, record: AuditRecord) -> bool:
        if intent.record.id in self.failing:
            raise ConnectionError("DynamoDB unreachable")
        self.confirmed.append(record)
        return True

    def mark_not_happened(self, intent: PendingIntent) -> bool:
        self.not_happened.append(intent.record.id)
        return True

    def settle(self, intent: PendingIntent, record: AuditRecord | None) -> bool:
        return self.mark_not_happened(intent) if record is None else self.confirm(intent, record)


class Queues:
    def __init__(self, started: dict[Band, list[datetime]]) -> None:
        self.started = started

    def moves_started(self, band: Band) -> list[datetime]:
        return self.started.get(band, [])


def _pending(record: AuditRecord) -> PendingIntent:
    return PendingIntent({"pk": {"S": "p"}, "sk": {"S": record.id}}, 0, record)


def test_the_tick_confirms_what_started_and_marks_what_did_not():
    moved, not_moved = _intent(Band.HIGH), _intent(Band.LOW)
    intents = Intents([_pending(moved), _pending(not_moved)])
    tick = RedriveIntents(intents, Queues({Band.HIGH: [T0]}), FakeClock(T0 + timedelta(minutes=1)))  # type: ignore[arg-type]
    assert tick.settle_due() == 2
    assert [r.id for r in intents.confirmed] == [moved.id]
    assert intents.not_happened == [not_moved.id]


def test_an_intent_that_cannot_be_settled_is_left_and_the_others_are_settled():
    failing, other = _intent(Band.HIGH), _intent(Band.HIGH)
    intents = Intents([_pending(failing), _pending(other)], failing={failing.id})
    tick = RedriveIntents(intents, Queues({Band.HIGH: [T0]}), FakeClock(T0))  # type: ignore[arg-type]
    assert tick.settle_due() == 1
    assert [r.id for r in intents.confirmed] == [other.id]


def test_intents_that_cannot_be_read_settle_nothing_and_raise_nothing():
    tick = RedriveIntents(Intents([], unreadable=True), Queues({}), FakeClock(T0))  # type: ignore[arg-type]
    assert tick.settle_due() == 0
