"""The freeze gate: a run claimed before a freeze was created, and marked by its creation (`blocked_by` the
freeze's id), is looked at once more when it would start. Still inside the freeze: SKIPPED `freeze`, or, kept by
its job's catch-up policy under DEFER, deferred until the freeze ends. Lifted or over: it runs.

Only such marked runs cost a read (one GetItem of the freeze); every other run passes without one.
"""

from __future__ import annotations

import math

from tickwork.executor.admission import ADMIT, Answer, Deferral, Entry, Skip
from tickwork.executor.outcomes import MAX_MESSAGE_BACKOFF_SECONDS
from tickwork.model.states import DeferReason, SkipReason
from tickwork.store.freezes import FreezeRecords, is_freeze_id


class FreezeGate:
    def __init__(self, freezes: FreezeRecords) -> None:
        self.freezes = freezes

    def admit(self, entry: Entry) -> Answer:
        run = entry.run
        if run.blocked_by is None or not is_freeze_id(run.blocked_by):
            return ADMIT
        freeze = self.freezes.get(run.blocked_by)
        if freeze is None or not freeze.blocks(entry.now):
            return ADMIT  # lifted, or over: it runs
        if run.deferred_reason is DeferReason.FREEZE:
            wait = math.ceil((freeze.ends_at - entry.now).total_seconds())
            return Deferral(DeferReason.FREEZE, max(1, min(wait, MAX_MESSAGE_BACKOFF_SECONDS)))
        return Skip(SkipReason.FREEZE)
