"""The freeze gate: a job's scheduled run is looked at once more when it would first start, against the freezes
(tickwork.model.freezes.subject_to_freezes: any other run, marked or not, runs on).

- A run marked by a freeze (`blocked_by` the freeze's id: claimed before its creation, or claimed through it by a
  tick because it ends within the horizon: tickwork.model.claim_plan) reads that freeze (one GetItem): still
  inside it, SKIPPED `freeze`, or, kept by its job's catch-up policy under DEFER, deferred until the freeze ends.
  Lifted, or kept for its end: it runs. Over by itself, its occurrence inside it: SKIPPED `freeze` however late
  it starts.
- Any other run that never started is matched against the freezes as this execution environment read them within
  RECENT_READ_FOR (one Query per environment per that time, never one per run): that catches a run a tick claimed
  while the freeze was being created, which its creation's marking could not see. A run one of them blocks reads
  that freeze (a lift since the read lets it run), is marked as the creation would have marked it, then decided the
  same way. Only a freeze created less than RECENT_READ_FOR before such a run starts can miss it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from tickwork.executor.admission import ADMIT, Answer, Deferral, Entry, Skip
from tickwork.executor.outcomes import MAX_MESSAGE_BACKOFF_SECONDS
from tickwork.model.blocking import OnBlocked
from tickwork.model.claim_plan import CATCHUP_KEEP
from tickwork.model.freezes import Freeze, subject_to_freezes
from tickwork.model.policies import CatchupPolicy
from tickwork.model.run import Run
from tickwork.model.run_target import RunTarget
from tickwork.model.states import DeferReason, SkipReason
from tickwork.store import JobRecords
from tickwork.store.freezes import FreezeReads, FreezeRecords, is_freeze_id


def freeze_over(freezes: Iterable[Freeze], run: Run, target: RunTarget, now: datetime) -> Freeze | None:
    """The freeze that blocks `run` (a first scheduled start) now, if any (the one that ends last): its occurrence
    is inside a freeze over its job (by its tenant, id and tags), which still holds."""
    over = [
        f
        for f in freezes
        if f.applies_to(run.tenant, run.job_id, target.tags) and f.blocks(run.occurrence_at) and f.blocks(now)
    ]
    return max(over, key=lambda f: f.ends_at, default=None)


def kept_to_its_end(freeze: Freeze, catchup: CatchupPolicy, next_occurrence: datetime | None) -> bool:
    """Whether a blocked occurrence waits for the freeze's end (DEFER) rather than being skipped: ALL keeps every
    one, LATEST the job's last inside the freeze (the next is at or after its end), NONE none."""
    if freeze.on_blocked is not OnBlocked.DEFER or CATCHUP_KEEP[catchup] == 0:
        return False
    return catchup is CatchupPolicy.ALL or next_occurrence is None or next_occurrence >= freeze.ends_at


def _decision(freeze: Freeze, kept: bool, now: datetime) -> Answer:
    if kept:
        wait = math.ceil((freeze.ends_at - now).total_seconds())
        return Deferral(DeferReason.FREEZE, max(1, min(wait, MAX_MESSAGE_BACKOFF_SECONDS)))
    return Skip(SkipReason.FREEZE)


class FreezeGate:
    def __init__(self, freezes: FreezeRecords, reads: FreezeReads, jobs: JobRecords) -> None:
        self.freezes, self.reads, self.jobs = freezes, reads, jobs

    def admit(self, entry: Entry) -> Answer:
        run = entry.run
        if not subject_to_freezes(run, leased=True):
            return ADMIT  # no read of the freezes, whatever marked it
        if run.blocked_by is not None and is_freeze_id(run.blocked_by):
            return self._marked(entry, run.blocked_by)
        seen = freeze_over(self.reads.recent_or_last(), run, entry.target, entry.now)
        if seen is None:
            return ADMIT
        freeze = self.freezes.get(seen.id)  # as it is now: lifted since the read, it runs
        if freeze is None or not freeze.blocks(entry.now):
            return ADMIT
        kept = freeze.on_blocked is OnBlocked.DEFER and self._kept(freeze, entry)
        self.freezes.mark_claimed(run.id, freeze, keep=kept, leased_by=entry.owner)
        return _decision(freeze, kept, entry.now)

    def _marked(self, entry: Entry, freeze_id: str) -> Answer:
        freeze = self.freezes.get(freeze_id)
        kept = entry.run.deferred_reason is DeferReason.FREEZE
        if freeze is not None and freeze.blocks(entry.now):
            return _decision(freeze, kept, entry.now)
        if freeze is None or kept or freeze.lifted_at is not None or not freeze.blocks(entry.run.occurrence_at):
            return ADMIT  # lifted (its runs run), kept for its end, or not inside it
        # Over by itself: its occurrence was inside it, and starting late (a backlog) does not change that.
        return Skip(SkipReason.FREEZE)

    def _kept(self, freeze: Freeze, entry: Entry) -> bool:
        """Under DEFER: the job's catch-up policy and next occurrence, from the job the executor read, else read now
        (a run by its message's copy: only a run a freeze blocks pays this read)."""
        job = entry.target.job or self.jobs.get_job(entry.run.job_id)
        if job is None:
            return False
        return kept_to_its_end(freeze, job.catchup, job.next_occurrence_after(entry.run.occurrence_at))
