"""Blocked occurrences: whether a job's calendars or a freeze keep an occurrence from running, and until when.

Pure (no I/O): the tick reads the calendars and freezes once per tick and hands each job the ones that apply to
it (`Blockers`); the claim plan (tickwork.model.claim_plan) and the preview ask this module about each occurrence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Protocol

from pydantic import AfterValidator, Field

from tickwork.model.budget import CALENDAR_STEP_BUDGET, CROSSING_CHECK_STEPS, OverBudget, StepBudget
from tickwork.model.calendars import MAX_CALENDARS_PER_JOB, CalendarDefinition, CalendarMode, CronWindow
from tickwork.model.errors import InvalidInput
from tickwork.model.states import SkipReason


class OnBlocked(StrEnum):
    """What becomes of an occurrence a calendar or a freeze blocks."""

    SKIP = "SKIP"  # recorded SKIPPED `calendar` (or `freeze`), naming what blocked it
    DEFER = "DEFER"  # runs at the first allowed instant; the job's catch-up policy collapses a stretch of them


def _distinct(ids: list[str]) -> list[str]:
    if len(set(ids)) != len(ids):
        raise ValueError("names a calendar more than once")
    return ids


CALENDAR_ID_PATTERN = r"^c[0-9a-z]{25}$"
CalendarId = Annotated[str, Field(pattern=CALENDAR_ID_PATTERN)]
CalendarIds = Annotated[
    list[CalendarId],
    Field(
        max_length=MAX_CALENDARS_PER_JOB,
        description="Ids of the tenant's calendars (GET /v1/calendars), each once.",
        json_schema_extra={"uniqueItems": True},
    ),
    AfterValidator(_distinct),
]


class Blocker(Protocol):
    """A calendar or a freeze, as far as blocking goes."""

    @property
    def id(self) -> str: ...

    @property
    def skip_reason(self) -> SkipReason: ...

    @property
    def on_blocked(self) -> OnBlocked | None:
        """Its own policy for what it blocks (a freeze's), or None: the job's (a calendar's)."""
        ...

    def blocks(self, at: datetime, budget: StepBudget | None = None) -> bool: ...

    def allowed_from(self, at: datetime, budget: StepBudget | None = None) -> datetime | None:
        """The first instant at or after `at` it allows; None: none it can name (never, as far as it knows).
        OverBudget when `budget` runs out first."""
        ...


@dataclass(frozen=True)
class Block:
    """Why an occurrence may not run at its time: the first blocker (in the job's order: its calendars, then
    freezes), and the first instant every blocker allows (None: none comes)."""

    reason: SkipReason
    by: str  # the calendar's or the freeze's id
    until: datetime | None
    on_blocked: OnBlocked | None = None  # the blocker's own policy (a freeze's); None: the job's

    def deferred(self, job_policy: OnBlocked) -> bool:
        """Run at the block's end: never when it has none (none comes, or none was found within the budget),
        so that such an occurrence is recorded skipped rather than waited on."""
        return (self.on_blocked or job_policy) is OnBlocked.DEFER and self.until is not None


def first_allowed(at: datetime, blockers: tuple[Blocker, ...], budget: StepBudget | None = None) -> datetime | None:
    """The first instant at or after `at` that no blocker blocks; None when none comes, or none is found within
    the budget (CALENDAR_STEP_BUDGET cron steps, each move past a blocker counted as one)."""
    try:
        return _crossed(at, blockers, budget or StepBudget())
    except OverBudget:
        return None


class _Allowing(Protocol):
    def allowed_from(self, at: datetime, budget: StepBudget | None = None) -> datetime | None: ...


def _crossed(at: datetime, blockers: tuple[_Allowing, ...], budget: StepBudget) -> datetime | None:
    instant = at
    while True:
        moved = False
        for blocker in blockers:
            allowed = blocker.allowed_from(instant, budget)
            if allowed is None:
                return None
            if allowed > instant:
                instant, moved = allowed, True
        if not moved:
            return instant
        budget.spend()


def block_at(at: datetime, blockers: tuple[Blocker, ...], budget: StepBudget | None = None) -> Block | None:
    """The block on the occurrence at `at`, or None when it may run. Within one budget (a fresh
    CALENDAR_STEP_BUDGET unless given): finding the first blocker costs a cron step per cron window, the rest of
    it goes to finding the block's end."""
    budget = budget or StepBudget()
    first = next((b for b in blockers if b.blocks(at, budget)), None)
    if first is None:
        return None
    return Block(first.skip_reason, first.id, first_allowed(at, blockers, budget), first.on_blocked)


def check_crossable(calendars: Sequence[CalendarDefinition], now: datetime, *, field: str) -> None:
    """InvalidInput when these calendars have a blackout whose end is not found within CALENDAR_STEP_BUDGET:
    one that never ends (an exclude window opening again before it closes) or one too long to cross. Each cron
    window of an exclude calendar is crossed alone from its next opening (an error names it, `windows[<i>].cron`,
    when `field` is `windows`), then the calendars together from `now` and from each window's next opening (a
    blackout already crossed is not crossed again; an error names `field`); all of it within
    CROSSING_CHECK_STEPS, past which the error names `field`. An include calendar with no window to come has an
    answer (never), not an error."""
    total = StepBudget(CROSSING_CHECK_STEPS)
    together = tuple(calendars)
    try:
        if field == "windows":
            for calendar in together:
                _check_windows_alone(calendar, now, total, field)
        starts = sorted(
            {now} | {s for c in together for w in c.windows if (s := w.next_start(now, c.zone, total)) is not None}
        )
        crossed_to = None
        for start in starts:
            if crossed_to is not None and start < crossed_to:
                continue  # inside a blackout already crossed
            crossed_to = _crossed_to(start, together, total)
            if crossed_to is None:
                break  # never allowed again (an include calendar's last window is over): an answer
    except OverBudget:
        raise InvalidInput.one(field, _UNCROSSABLE) from None


def _check_windows_alone(calendar: CalendarDefinition, now: datetime, total: StepBudget, field: str) -> None:
    if calendar.mode is not CalendarMode.EXCLUDE:
        return
    for index, window in enumerate(calendar.windows):
        if not isinstance(window, CronWindow):
            continue
        opens = window.next_start(now, calendar.zone, total)
        if opens is None:
            continue
        try:
            _crossed_to(opens, (calendar.model_copy(update={"windows": [window]}),), total)
        except OverBudget:
            raise InvalidInput.one(f"{field}[{index}].cron", _UNCROSSABLE) from None


def _crossed_to(at: datetime, calendars: tuple[CalendarDefinition, ...], total: StepBudget) -> datetime | None:
    """The end of the blackout at `at` (None: none comes, an include calendar's never), found within
    CALENDAR_STEP_BUDGET, its steps counted in `total` too; OverBudget past either."""
    crossing = StepBudget()
    try:
        return _crossed(at, calendars, crossing)
    finally:
        total.spent += crossing.spent
        if total.spent_all:
            raise OverBudget(f"more than {total.steps} cron steps")


_UNCROSSABLE = (
    f"has a blackout with no end found within {CALENDAR_STEP_BUDGET} cron steps (windows that open again before "
    "they close never end; see docs/cron.md, Bounds): shorten the windows or space them out"
)
