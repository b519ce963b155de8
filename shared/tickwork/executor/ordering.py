"""Ordering keys at the executor (docs/fairness.md, "Ordering keys"): runs that share a key (within the tenant) run
one at a time, in the order of their scheduled times, ties broken by run id.

Each run of a key has an entry in the key's queue from its creation (tickwork.store.ordering), so a run delivered
before an earlier one still waits for it. A run may start when its entry is the queue's first pending one and it
takes the key's head (one conditional write: nobody else holds it); it holds the head until it ends, however long
it retries or yields (its next segment takes it again as its holder), and a run taken over from a dead executor
holds it by the same id. When it ends, its hold is given back in admission's one place
(tickwork.executor.admission): succeeded, skipped or FAILED with `on_failure: continue`, the key's cursor passes its
entry and the next run may take the head; FAILED with `block`, the head stays its, marked blocked, and every later
run of the key is deferred (`ordering_blocked`) until the user retries or redrives that run (it takes the head
again as its holder) or skips it (`POST /v1/runs/{id}/skip`). A blocked key emits `OrderingKeysBlocked`, on which
the template's OrderingKeyBlockedAlarm fires.

A waiting run is deferred (`ordering_key`, or `ordering_blocked` behind a blocked key), its attempt not consumed,
to look again with the semaphores' backoff (1 s doubling to 60 s, jittered). What a dead executor left
undone, the next run of the key that finds it finishes: a head held by a run that has ended is given back for it,
a first entry whose run has ended is passed (or blocks the key, if it FAILED under `block`), and an entry whose run
was never created (its creator died between the two writes) is passed after ORPHAN_ENTRY_SECONDS.

A run with no ordering key costs nothing here: no call at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Protocol

from tickwork.executor.admission import ADMIT, Admit, Answer, Deferral, Entry
from tickwork.executor.limits import semaphore_wait_seconds
from tickwork.model.backoff import Random
from tickwork.model.clock import to_ms
from tickwork.model.policies import OrderingKey, OrderingOnFailure
from tickwork.model.run import Run
from tickwork.model.states import DeferReason, RunStatus
from tickwork.observability import logger, metrics
from tickwork.store import Head, OrderingRecords, QueueEntry
from tickwork.store.ordering import entry_sort

ORPHAN_ENTRY_SECONDS = 300  # an entry whose run does not exist this long after it was written never will
LOOKS = 4  # cleanups one admission may do before it defers (each is a dead executor's leftover)


class RunReader(Protocol):
    def get_run(self, run_id: str, *, consistent: bool = True) -> Run | None: ...


def blocks_key(run: Run | None, on_failure: OrderingOnFailure) -> bool:
    """A run that holds its key back: it FAILED, and its key says block."""
    return run is not None and run.status is RunStatus.FAILED and on_failure is OrderingOnFailure.BLOCK


def _count_blocked(run_id: str) -> None:
    metrics.add_metric(name="OrderingKeysBlocked", unit="Count", value=1)
    logger.warning("ordering key blocked by a FAILED run until it is retried or skipped", extra={"blocker": run_id})


@dataclass
class KeyTurn:
    """A run's turn at its ordering key (the key's head), held until the run ends; given back as its end says."""

    records: OrderingRecords
    runs: RunReader
    run: Run
    ordering: OrderingKey
    shared_with_takeover: ClassVar[bool] = True  # held under the run's id: a takeover holds it too

    def extend(self, until: datetime) -> list[str]:
        return []  # held until the run ends, not for a lease: nothing lapses

    def carry(self, until: datetime) -> None:
        pass  # kept between a yielded run's segments: no later run of the key runs between them

    def release(self) -> None:
        """Given back by how the run now stands: ended (the key passes its entry: the next run's turn), FAILED
        under `block` (the key blocked), or not ended (deferred by a later gate, or retrying: the turn goes back
        to the queue's first, which it still is unless an earlier run was created meanwhile)."""
        tenant, key, run_id = self.run.tenant, self.ordering.key, self.run.id
        now = self.runs.get_run(run_id)
        if blocks_key(now, self.ordering.on_failure):
            if self.records.block(tenant, key, run_id=run_id):
                _count_blocked(run_id)
            return
        ended = now is not None and now.status.terminal
        self.records.give_back(tenant, key, run_id=run_id, passed=entry_sort(key, self.run) if ended else None)


class OrderingGate:
    def __init__(self, records: OrderingRecords, runs: RunReader, *, rng: Random | None = None) -> None:
        self.records = records
        self.runs = runs
        self.rng = rng

    def admit(self, entry: Entry) -> Answer:
        """The key's turn (held until the run ends), or a deferral: an earlier run has it, or the key is blocked."""
        run, ordering = entry.run, entry.run.ordering
        if ordering is None:
            return ADMIT
        for _ in range(LOOKS):
            answer = self._look(run, ordering, entry.now)
            if answer is not None:
                return answer
        return self._wait(run)

    def carried(self, run: Run) -> KeyTurn | None:
        """The turn a run of a key holds, as admitted or carried between its segments (given back when it ends)."""
        return KeyTurn(self.records, self.runs, run, run.ordering) if run.ordering is not None else None

    def _look(self, run: Run, ordering: OrderingKey, now: datetime) -> Answer | None:
        """One look at the key: an answer, or None after tidying up what a dead executor left (look again)."""
        tenant, key = run.tenant, ordering.key
        own = entry_sort(key, run)
        head = self.records.head(tenant, key)
        if head.holder == run.id:  # taken over from a dead executor, or a retried (or redriven) blocker
            self.records.take(tenant, ordering, run_id=run.id, sort=own)
            return self._turn(run, ordering)
        if head.holder is not None:
            return self._behind_holder(run, head, tenant, key)
        if head.after is not None and own <= head.after:
            # Later runs of its key have run already (it was created after them, or retried after it was
            # skipped): it goes as soon as the key is free.
            return self._turn(run, ordering) if self.records.take(tenant, ordering, run_id=run.id, sort=own) else None
        first = self.records.first(tenant, key, after=head.after)
        if first is None or first.sort > own:
            # Its entry is missing (created before its job had the key, or expired while it waited): in line.
            self.records.enqueue(run, now=now)
            return None
        if first.run_id != run.id:
            return self._behind_first(run, first, head, key, now)
        # Its turn; a lost race means another run took the head meanwhile: look again.
        return self._turn(run, ordering) if self.records.take(tenant, ordering, run_id=run.id, sort=own) else None

    def _turn(self, run: Run, ordering: OrderingKey) -> Admit:
        return Admit(KeyTurn(self.records, self.runs, run, ordering))

    def _behind_holder(self, run: Run, head: Head, tenant: str, key: str) -> Answer | None:
        assert head.holder is not None
        holder = self.runs.get_run(head.holder)
        if holder is not None and not holder.status.terminal:
            return self._wait(run)
        if blocks_key(holder, head.on_failure):
            if self.records.block(tenant, key, run_id=head.holder):  # its executor died before blocking it
                _count_blocked(head.holder)
            return self._blocked(run)
        # The holder ended (or is gone) and its executor died before giving the turn back: done for it.
        self.records.give_back(tenant, key, run_id=head.holder, passed=head.holder_sort)
        return None

    def _behind_first(self, run: Run, first: QueueEntry, head: Head, key: str, now: datetime) -> Answer | None:
        tenant = run.tenant
        earlier = self.runs.get_run(first.run_id)
        if earlier is None and to_ms(now) - first.created_ms < ORPHAN_ENTRY_SECONDS * 1000:
            return self._wait(run)  # its creator is writing it
        if earlier is not None and not earlier.status.terminal:
            return self._wait(run)
        if blocks_key(earlier, first.on_failure) and not first.skipped:
            # It FAILED without holding the turn (its attempts ran out before it was admitted): it blocks the key.
            assert earlier is not None
            blocker = OrderingKey(key=key, on_failure=first.on_failure)
            if self.records.take(tenant, blocker, run_id=earlier.id, sort=first.sort, blocked=True):
                _count_blocked(earlier.id)
            return None
        # Ended without passing here (skipped while its job was paused, say), or never created: passed over.
        self.records.pass_first(tenant, key, sort=first.sort, seen_after=head.after)
        return None

    def _wait(self, run: Run) -> Deferral:
        return Deferral(DeferReason.ORDERING_KEY, semaphore_wait_seconds(run.deferred, self.rng))

    def _blocked(self, run: Run) -> Deferral:
        # Counted at every look, so the alarm's 5-minute periods see it while runs wait (they look at least
        # once a minute); the same backoff as any wait, so a retried or skipped blocker lets them go soon.
        metrics.add_metric(name="OrderingKeysBlocked", unit="Count", value=1)
        return Deferral(DeferReason.ORDERING_BLOCKED, semaphore_wait_seconds(run.deferred, self.rng))
