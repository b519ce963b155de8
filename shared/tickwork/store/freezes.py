"""Freeze items, every tenant's in one partition (pk=FREEZES, sk=FREEZE#<id>): a tick reads them all with one
Query, whatever the number of tenants and jobs. An item stays a day past its end (TTL `expires_at`), so that a
tick late after it ended still finds what deferred a job's occurrences to its end. And the runs a new freeze
marks: claimed (QUEUED) before it existed, looked at again by their executor (tickwork.executor.freeze_gate).
`FreezeReads` keeps one execution environment's read of the partition: a tick reads it fresh; a create's claim and
an executor take a read up to RECENT_READ_FOR old, so they cost one Query per environment per that time.

A freeze item is also the outbox of its own `Freeze Started` and `Freeze Ended` (tickwork.progress.freeze_events):
each fact is recorded once by a conditional write of its marker (`started_event_at`, `ended_event_at`), which
also sets the event's due time (`started_event_due`, `ended_event_due`, ms); the publisher clears the due time
once EventBridge took it. The tick, which reads every freeze anyway, publishes one still due past its time."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import Clock, iso, to_ms
from tickwork.model.expiry import EXPIRY_BUCKET
from tickwork.model.freezes import Freeze
from tickwork.model.run_event_kinds import RunEventKind
from tickwork.model.states import DeferReason, RunStatus
from tickwork.observability import logger
from tickwork.store.codec import deserialize, expression_values, run_key, serialize
from tickwork.store.conditional import Table
from tickwork.store.pending_audits import MARKER as AUDIT_MARKER

FREEZES_PK = "FREEZES"
FREEZE_PREFIX = "FREEZE#"
KEPT_AFTER_END = timedelta(days=1)
# How old a read of the freezes a create's claim or an executor goes by: a freeze created since is seen that much
# later at most (docs/operations.md, "Freezes").
RECENT_READ_FOR = timedelta(seconds=5)
# Per event kind: its marker (when its fact was recorded) and its due time in the outbox (until published).
EVENT_MARKERS = {RunEventKind.FREEZE_STARTED: "started_event_at", RunEventKind.FREEZE_ENDED: "ended_event_at"}
EVENT_DUE = {RunEventKind.FREEZE_STARTED: "started_event_due", RunEventKind.FREEZE_ENDED: "ended_event_due"}
_NOT_THE_FREEZE = {"pk", "sk", "expires_at", AUDIT_MARKER, EXPIRY_BUCKET, *EVENT_MARKERS.values(), *EVENT_DUE.values()}


def freeze_key(freeze_id: str) -> dict[str, Any]:
    return {"pk": {"S": FREEZES_PK}, "sk": {"S": FREEZE_PREFIX + freeze_id}}


def _expiry(freeze: Freeze) -> int:
    return int((freeze.ends_at + KEPT_AFTER_END).timestamp())


def _freeze(attrs: dict[str, Any]) -> Freeze:
    return Freeze.model_validate({k: v for k, v in attrs.items() if k not in _NOT_THE_FREEZE})


@dataclass(frozen=True)
class StoredFreeze:
    """A freeze with its events' state: which facts are recorded, and which events are still to publish (the
    kind's due time, ms)."""

    freeze: Freeze
    recorded: frozenset[RunEventKind] = frozenset()
    unpublished: dict[RunEventKind, int] = field(default_factory=dict)

    @classmethod
    def of(cls, attrs: dict[str, Any]) -> StoredFreeze:
        return cls(
            _freeze(attrs),
            frozenset(kind for kind, marker in EVENT_MARKERS.items() if marker in attrs),
            {kind: int(attrs[due]) for kind, due in EVENT_DUE.items() if due in attrs},
        )

    def events_due(self, now: datetime) -> list[RunEventKind]:
        """Its facts that have happened and are not recorded yet (tickwork.model.freezes)."""
        return self.freeze.events_due(
            now,
            started_recorded=RunEventKind.FREEZE_STARTED in self.recorded,
            ended_recorded=RunEventKind.FREEZE_ENDED in self.recorded,
        )


def _recorded(kind: RunEventKind, now: datetime, publish_by: datetime) -> dict[str, Any]:
    """The attributes that record a fact and put its event in the outbox."""
    return {EVENT_MARKERS[kind]: iso(now), EVENT_DUE[kind]: to_ms(publish_by)}


class FreezeRecords:
    """The freeze items of the table. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def put_new(
        self, freeze: Freeze, *, started_publish_by: datetime | None = None, audit: dict[str, Any] | None = None
    ) -> bool:
        """A new freeze; with `started_publish_by`, its start recorded too (it starts at once), its event in the
        outbox until then. `audit`: its audit record's item, in the same transaction."""
        attrs = {"pk": FREEZES_PK, "sk": FREEZE_PREFIX + freeze.id, **freeze.model_dump(mode="json")}
        if started_publish_by is not None:
            attrs |= _recorded(RunEventKind.FREEZE_STARTED, freeze.created_at, started_publish_by)
        item = serialize({**attrs, "expires_at": _expiry(freeze)})
        won, _ = self._table.put_if_absent(item, return_old=False, audit=audit)
        return won

    def get(self, freeze_id: str) -> Freeze | None:
        stored = self.get_stored(freeze_id)
        return stored.freeze if stored is not None else None

    def get_stored(self, freeze_id: str) -> StoredFreeze | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=freeze_key(freeze_id), ConsistentRead=True
        ).get("Item")
        return StoredFreeze.of(deserialize(item)) if item else None

    def lift(
        self,
        freeze: Freeze,
        now: datetime,
        *,
        by: str,
        ended_publish_by: datetime | None = None,
        audit: dict[str, Any] | None = None,
    ) -> bool:
        """Ends it now, once, if it has not ended: False when it was lifted already or is over (its end recorded).
        With `ended_publish_by` (it had started), its end is recorded by the same write, its event in the outbox.
        `audit`: its audit record's item, in the same transaction."""
        lifted = freeze.model_copy(update={"lifted_at": now})
        sets = {"lifted_at": iso(now), "lifted_by": by, "expires_at": _expiry(lifted)}
        if ended_publish_by is not None:
            sets |= _recorded(RunEventKind.FREEZE_ENDED, now, ended_publish_by)
        ended = EVENT_MARKERS[RunEventKind.FREEZE_ENDED]
        return self._table.update_if(
            freeze_key(freeze.id),
            "SET " + ", ".join(f"{name} = :{name}" for name in sets),
            f"attribute_exists(pk) AND attribute_not_exists(lifted_at) AND attribute_not_exists({ended})"
            " AND #until > :now",
            {"#until": "until"},
            expression_values(now=iso(now), **sets),
            audit=audit,
        )

    def all(self) -> list[Freeze]:
        """Every freeze still kept (ended less than a day ago, or to come): one Query per 1 MB."""
        return [stored.freeze for stored in self.all_stored()]

    def all_stored(self) -> list[StoredFreeze]:
        """`all`, with each freeze's events' state."""
        return [StoredFreeze.of(a) for a in self._table.query_all("pk = :pk", {":pk": FREEZES_PK})]

    # ------------------------------------------------------------ its events' outbox

    def record_event(self, freeze_id: str, kind: RunEventKind, now: datetime, *, publish_by: datetime) -> bool:
        """The fact, once: False if it was recorded already (by a racing tick, or the API)."""
        sets = _recorded(kind, now, publish_by)
        return self._table.update_if(
            freeze_key(freeze_id),
            "SET " + ", ".join(f"{name} = :{name}" for name in sets),
            f"attribute_exists(pk) AND attribute_not_exists({EVENT_MARKERS[kind]})",
            None,
            expression_values(**sets),
        )

    def take_event(self, freeze_id: str, kind: RunEventKind, *, expected_due: int, retry_at: datetime) -> bool:
        """An unpublished event past its due time, taken by this caller (due again at `retry_at`, were it to die
        before publishing): False if another took it or it was published."""
        due = EVENT_DUE[kind]
        return self._table.update_if(
            freeze_key(freeze_id),
            f"SET {due} = :retry",
            f"{due} = :old",
            None,
            expression_values(retry=to_ms(retry_at), old=expected_due),
        )

    def clear_event(self, freeze_id: str, kind: RunEventKind, *, due: datetime) -> bool:
        """The event is published: out of the outbox, if nobody took it since."""
        name = EVENT_DUE[kind]
        return self._table.update_if(
            freeze_key(freeze_id), f"REMOVE {name}", f"{name} = :due", None, expression_values(due=to_ms(due))
        )

    def mark_claimed(self, run_id: str, freeze: Freeze, *, keep: bool, leased_by: str | None = None) -> bool:
        """A run claimed before the freeze, still QUEUED (no executor has leased it): marked `blocked_by` the
        freeze, so that its executor looks at the freeze when it would start (tickwork.executor.freeze_gate);
        `keep` (DEFER, within the job's catch-up) marks it to wait for the freeze's end rather than be skipped.
        With `leased_by`: the run as that lease holds it, marked by its executor (one the creation missed)."""
        sets = "SET blocked_by = :by" + (", deferred_reason = :why" if keep else "")
        status = RunStatus.QUEUED if leased_by is None else RunStatus.RUNNING
        values = {"by": freeze.id, "status": status.value}
        condition = "#status = :status"
        if keep:
            values["why"] = DeferReason.FREEZE.value
        if leased_by is not None:
            values["owner"] = leased_by
            condition += " AND lease_owner = :owner"
        return self._table.update_if(
            run_key(run_id), sets, condition, {"#status": "status"}, expression_values(**values)
        )

    def release_held(self, run_id: str, freeze: Freeze, now: datetime) -> bool:
        """A run `freeze` holds for its end (marked by it, kept for it, still QUEUED), let start now that it is
        lifted: its lease refuses no message from now on (a deferral's `not_before` would, to the freeze's end or
        15 minutes), and its due entry is now (the tick re-sends it, were the lift's message lost)."""
        values = expression_values(
            at=iso(now),
            ms=to_ms(now),
            status=RunStatus.QUEUED.value,
            by=freeze.id,
            why=DeferReason.FREEZE.value,
        )
        return self._table.update_if(
            run_key(run_id),
            "SET not_before = :at, not_before_ms = :ms, due_at = :ms",
            "#status = :status AND blocked_by = :by AND deferred_reason = :why",
            {"#status": "status"},
            values,
        )


class FreezeReads:
    """One execution environment's read of the freezes: fresh (a tick), or as read within RECENT_READ_FOR (a
    create's claim, an executor; the API instance that creates or lifts a freeze forgets its read)."""

    def __init__(self, records: FreezeRecords | None, clock: Clock) -> None:
        self.records, self.clock = records, clock
        self._read: tuple[datetime, list[StoredFreeze]] | None = None
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()  # an executor's records on threads make one Query, not one each

    def fresh(self) -> list[Freeze]:
        return [stored.freeze for stored in self._fresh()]

    def recent(self) -> list[Freeze]:
        with self._refreshing:
            with self._lock:
                read = self._read
            if read is not None and self.clock.now() - read[0] < RECENT_READ_FOR:
                return [stored.freeze for stored in read[1]]
            return self.fresh()

    def recent_or_last(self) -> list[Freeze]:
        """`recent`; if the read fails, the last read (logged), or none, kept as if read now: a run is not held up
        by a failed read, and a read that keeps failing is tried once per RECENT_READ_FOR, not once per run."""
        try:
            return self.recent()
        except Exception:
            logger.exception("could not read the freezes; going by the last read")
            with self._lock:
                last = self._read[1] if self._read is not None else []
                self._read = (self.clock.now(), last)
            return [stored.freeze for stored in last]

    def read_since(self, since: datetime) -> list[StoredFreeze]:
        """With their events' state, as read at `since` or later (a tick's own read, when it had something due to
        claim), or now."""
        with self._lock:
            read = self._read
        if read is not None and read[0] >= since:
            return read[1]
        return self._fresh()

    def _fresh(self) -> list[StoredFreeze]:
        at = self.clock.now()  # before the Query: a freeze written after this instant may be missing from it
        found = self.records.all_stored() if self.records is not None else []
        with self._lock:
            self._read = (at, found)
        return found

    def forget(self) -> None:
        with self._lock:
            self._read = None


def is_freeze_id(value: str) -> bool:
    return len(value) == 26 and value.startswith("f")
