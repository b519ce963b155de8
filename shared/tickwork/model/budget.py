"""The budget of work one evaluation of a calendar may take, counted in cron steps (one croniter step each).

Every question the tick or the API asks of a job's calendars ("is this instant blocked?", "when may it run?")
is answered within CALENDAR_STEP_BUDGET steps; a calendar whose blackout cannot be crossed within it is refused
at create (tickwork.model.blocking.check_crossable), and one met at run time is answered "none found" (a skip,
recorded). docs/cron.md, "Bounds", lists every bound.
"""

from __future__ import annotations

from dataclasses import dataclass

CALENDAR_STEP_BUDGET = 1_000
# A calendar's (or a job's calendars') check at create or update (tickwork.model.blocking.check_crossable):
# every blackout it crosses within CALENDAR_STEP_BUDGET each, and all of them within this.
CROSSING_CHECK_STEPS = 5 * CALENDAR_STEP_BUDGET
# One claim of a job (tickwork.model.claim_plan), or one preview of it: every occurrence's evaluation within
# CALENDAR_STEP_BUDGET, and all of them within this. A claim past it stops there (the job stays due for the
# rest, decided by the next tick); a preview past it answers the occurrences it marked.
OCCURRENCES_STEP_BUDGET = 2 * CALENDAR_STEP_BUDGET


class OverBudget(Exception):
    """The evaluation took its whole budget without an answer."""


@dataclass
class StepBudget:
    """The cron steps one evaluation has left."""

    steps: int = CALENDAR_STEP_BUDGET
    spent: int = 0

    @property
    def spent_all(self) -> bool:
        return self.spent >= self.steps

    def spend(self, steps: int = 1) -> None:
        self.spent += steps
        if self.spent > self.steps:
            raise OverBudget(f"more than {self.steps} cron steps")
