"""A job's overlap policy at the executor (docs/policies.md, "Overlap"): may this run start beside the job's
running run, and if not, is it skipped or does it wait?

Every policy but ALLOW keeps one running slot on the job item (`running_run`, until its holder's lease ends and
extended with it), so a crashed holder's slot frees when its lease does. A durable run that yields keeps it between
its segments (until the tick would re-send its next segment, and a lease more), and its next segment takes it as
its holder's, before BUFFER_ONE's waiter; one that ends between segments gives it back:

- SKIP: a run that finds the slot taken is SKIPPED `overlap`.
- BUFFER_ONE: a run that finds the slot taken takes the job's one wait slot (`buffered_run`, a conditional
  write too) and is deferred (`overlap_buffer`: no attempt consumed, its lateness still counting) to look again
  every BUFFER_POLL_SECONDS; a run that finds the wait slot taken too is SKIPPED `overlap`. The waiter has the
  first turn at the freed slot, and leaves the wait slot in the write that takes it. A waiter that never comes
  back (crashed, message lost) loses its wait slot BUFFER_HOLD_SECONDS after its next look.
- CANCEL_OTHER: a run that finds the slot taken asks its holder to stop (RunLeases.request_cancel; the holder
  watches for it every CANCEL_POLL_SECONDS, sees ctx.cancelled, and is recorded SKIPPED `cancelled`), and is
  deferred (`overlap_cancel`) until the slot is free or its holder's lease lapsed. A holder between its segments is
  asked the same way, and its next segment is recorded SKIPPED `cancelled` without running (RunExecutor). A run
  older than the holder (a waiter that lost the freed slot to a newer run) is SKIPPED `overlap` instead: the newest
  run wins.

ALLOW costs nothing here: no call at all. Nor does BUFFER_ALL: its runs wait their turn at an ordering key named by
the job's id (tickwork.executor.ordering).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import ClassVar

from tickwork.executor.admission import ADMIT, Admit, Answer, Deferral, Entry, Skip
from tickwork.model.ids import parse_run_id
from tickwork.model.policies import OverlapPolicy
from tickwork.model.run import Run
from tickwork.model.states import DeferReason, SkipReason
from tickwork.observability import metrics
from tickwork.store import RunLeases, RunningSlots

BUFFER_POLL_SECONDS = 1  # how often a waiting run looks at the slot again: a buffered run starts within this
CANCEL_POLL_SECONDS = 1  # how often a CANCEL_OTHER run looks whether it was asked to stop
BUFFER_HOLD_SECONDS = 30  # the wait slot outlives the waiter's next look by this, then a crashed waiter's frees


class RunningSlot:
    """The job's running slot, held by the run (under its id) with its lease."""

    shared_with_takeover: ClassVar[bool] = True  # an executor that takes the run over holds it by the same id

    def __init__(self, slots: RunningSlots, job_id: str, run_id: str) -> None:
        self.slots, self.job_id, self.run_id = slots, job_id, run_id

    def extend(self, until: datetime) -> list[str]:
        if self.slots.extend_running_slot(self.job_id, run_id=self.run_id, until=until):
            return []
        return ["the job's running slot (its overlap policy)"]

    def release(self) -> None:
        # Not held till its lease ends: a waiting run starts now.
        self.slots.release_running_slot(self.job_id, run_id=self.run_id)

    def carry(self, until: datetime) -> None:
        # A yielded run keeps the slot between its segments: the next occurrence does not start beside it.
        self.slots.extend_running_slot(self.job_id, run_id=self.run_id, until=until)


class OverlapGate:
    def __init__(self, slots: RunningSlots, leases: RunLeases) -> None:
        self.slots, self.leases = slots, leases  # the slot is on the job; a holder is asked to stop on its run

    def admit(self, entry: Entry) -> Answer:
        """Take the job's running slot (held until the run's lease ends), or say why not: skipped, or deferred for
        how long. The slot is one conditional write on the job: of two runs starting together, exactly one runs."""
        run, job_id, policy, until, now = entry.run, entry.target.owner_id, entry.target.overlap, entry.until, entry.now
        if not policy.takes_running_slot:
            return ADMIT  # ALLOW; or BUFFER_ALL, whose runs wait their turn at their ordering key instead
        slot = Admit(self.carried(run, job_id))
        if policy is OverlapPolicy.SKIP:
            # One write (its own slot, a yielded run's or a takeover's, included); its failure needs no detail.
            taken = self.slots.take_running_slot(job_id, run_id=run.id, until=until, now=now)
            return slot if taken else _skipped(run)
        buffering = policy is OverlapPolicy.BUFFER_ONE
        claim = self.slots.claim_running_slot(job_id, run_id=run.id, until=until, now=now, respect_buffer=buffering)
        if claim.taken:
            return slot
        if claim.own and self.slots.extend_running_slot(job_id, run_id=run.id, until=until):
            # Its own slot (a yielded run's next segment, a takeover), refused for BUFFER_ONE's waiter only: the
            # waiter waits for this run to end, as it would had the run not yielded.
            return slot
        if buffering:
            return self._wait_in_buffer(run, job_id, now)
        return self._cancel_holder(run, claim.holder)

    def carried(self, run: Run, job_id: str) -> RunningSlot:
        """The slot a run of the job holds, as admitted or carried between its segments (given back when it ends)."""
        return RunningSlot(self.slots, job_id, run.id)

    def _wait_in_buffer(self, run: Run, job_id: str, now: datetime) -> Skip | Deferral:
        hold_until = now + timedelta(seconds=BUFFER_POLL_SECONDS + BUFFER_HOLD_SECONDS)
        if not self.slots.take_buffer_slot(job_id, run_id=run.id, until=hold_until, now=now):
            return _skipped(run)  # another run waits already: at most one does
        if run.deferred_reason is not DeferReason.OVERLAP_BUFFER:
            metrics.add_metric(name="RunsBuffered", unit="Count", value=1)
        return Deferral(DeferReason.OVERLAP_BUFFER, BUFFER_POLL_SECONDS)

    def _cancel_holder(self, run: Run, holder: str | None) -> Skip | Deferral:
        if holder is not None:
            parsed = parse_run_id(holder)
            if parsed is not None and parsed[1] > run.occurrence_at:
                return _skipped(run)  # a newer run holds the slot: this one is superseded, not its stopper
            # Idempotent, and refused (False) once the holder has ended: then its slot is about to be released.
            self.leases.request_cancel(holder)
        # No live holder: a waiter of BUFFER_ONE's kind cannot exist here, so the slot was released or lapsed
        # between the claim's read and now; look again at once (the shortest deferral).
        return Deferral(DeferReason.OVERLAP_CANCEL, CANCEL_POLL_SECONDS)


def _skipped(run: Run) -> Skip | Deferral:
    """A run refused the slot is skipped, unless its handler has run: one that yielded (its slot lapsed in a gap
    between its segments longer than it was kept for, and another run took it), or one retried after it failed
    while a newer run holds the slot. Begun, it is never skipped for overlap, but waits for the slot."""
    if run.has_run:
        return Deferral(DeferReason.OVERLAP_BUFFER, BUFFER_POLL_SECONDS)
    return Skip(SkipReason.OVERLAP)
