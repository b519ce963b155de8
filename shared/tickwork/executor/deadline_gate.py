"""A run whose job's deadline says `on_miss: CANCEL` does not start past its deadline: it is recorded FAILED
`deadline` instead (tickwork.model.deadlines); and one stopped by the tick's cancel at its deadline is recorded so."""

from __future__ import annotations

from datetime import datetime

from tickwork.executor.admission import ADMIT, Answer, Entry, Fail
from tickwork.model.clock import iso
from tickwork.model.deadlines import DEADLINE_ERROR, OnMiss
from tickwork.model.run import Run, RunError
from tickwork.model.run_target import RunTarget


def stopped_by_deadline(run: Run, target: RunTarget, now: datetime) -> RunError | None:
    """The error a run past its CANCEL deadline is recorded FAILED with; None if it is not one."""
    deadline = target.deadline
    if deadline is None or deadline.on_miss is not OnMiss.CANCEL or run.deadline_at is None or now < run.deadline_at:
        return None
    return RunError(type=DEADLINE_ERROR, message=f"past its deadline ({iso(run.deadline_at)}): on_miss CANCEL")


class DeadlineGate:
    def admit(self, entry: Entry) -> Answer:
        error = stopped_by_deadline(entry.run, entry.target, entry.now)
        return Fail(error) if error is not None else ADMIT
