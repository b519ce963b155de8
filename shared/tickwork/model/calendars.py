"""Calendars: named sets of windows in an IANA zone that keep a job's occurrences out (`exclude`) or in (`include`).

Pure (no I/O): a window answers which of its spans holds an instant and where its next span starts; the
decision a claim makes of them is tickwork.model.blocking.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from tickwork.model.budget import OCCURRENCES_STEP_BUDGET, OverBudget, StepBudget
from tickwork.model.schedule import CallerInstant, Schedule, UtcDatetime, firing_cron, resolve_wall_time, validate_cron
from tickwork.model.states import SkipReason

MAX_WINDOW_MINUTES = 7 * 24 * 60  # a recurring window lasts at most 7 days
MAX_WINDOWS = 100
MAX_DATES = 366
MAX_CALENDARS_PER_JOB = 10
# Validation context of a calendar read from the table (tickwork.store.calendars): what was accepted once is
# read back, never refused.
STORED = "stored"
# How far ahead an `include` calendar's next window is looked for; none by then: the occurrence never runs.
LOOK_AHEAD = timedelta(days=400)
# A calendar's preview of what it blocks (GET /v1/calendars/{id}/blocked): at most this far ahead and this many
# spans, within OCCURRENCES_STEP_BUDGET cron steps; past any of them the answer stops there, and says so.
BLOCKED_PREVIEW_MAX_DAYS = 14
MAX_BLOCKED_SPANS = 200


class CalendarMode(StrEnum):
    EXCLUDE = "exclude"  # a blackout: nothing runs inside its windows
    INCLUDE = "include"  # a maintenance window: runs only inside its windows


Span = tuple[datetime, datetime]  # [start, end), UTC


def _format(name: str, description: str) -> dict[str, str]:
    """A string the server checks beyond what a pattern says, named by its format in the OpenAPI document."""
    return {"type": "string", "format": name, "description": description}


def _date_text(value: object) -> object:
    """A date as written, YYYY-MM-DD: never a number (pydantic would read one as a timestamp)."""
    if isinstance(value, int | float | bool):
        raise ValueError("must be a date written YYYY-MM-DD")
    return value


class DatesWindow(BaseModel):
    """Whole days, midnight to midnight in the calendar's zone (a 23- or 25-hour day on a DST change)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dates: list[Annotated[date, BeforeValidator(_date_text)]] = Field(min_length=1, max_length=MAX_DATES)

    def span_holding(self, at: datetime, zone: ZoneInfo, budget: StepBudget) -> Span | None:
        day = at.astimezone(zone).date()
        return _day_span(day, zone) if day in self.dates else None

    def next_start(self, at: datetime, zone: ZoneInfo, budget: StepBudget) -> datetime | None:
        starts = [s for s in (_day_span(d, zone)[0] for d in self.dates) if s > at]
        return min(starts, default=None)


class CronWindow(BaseModel):
    """A window opening at each of a cron's wall times in the calendar's zone, lasting `duration_minutes` of
    real time (a window across a DST change ends an hour earlier or later on the wall clock).

    Evaluated without walking its openings: the window holding an instant is the one that opened last at or
    before it (one cron step back), and the next one opens one step forward."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cron: Annotated[str, WithJsonSchema(_format("cron", "When each window opens: 5 fields, or 6 with seconds first."))]
    duration_minutes: int = Field(ge=1, le=MAX_WINDOW_MINUTES)

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str, info: ValidationInfo) -> str:
        if info.context and info.context.get(STORED):
            return validate_cron(value)  # stored before a window had to fire: read back, it never opens
        return firing_cron(value)  # a job's schedule's rule: valid, and fires

    def span_holding(self, at: datetime, zone: ZoneInfo, budget: StepBudget) -> Span | None:
        budget.spend()
        opened = _opening_schedule(self.cron, zone.key).latest_at_or_before(at)
        if opened is None:
            return None
        end = opened + timedelta(minutes=self.duration_minutes)
        return (opened, end) if at < end else None

    def next_start(self, at: datetime, zone: ZoneInfo, budget: StepBudget) -> datetime | None:
        budget.spend()
        return _opening_schedule(self.cron, zone.key).next_after(at, anchor=at)


@lru_cache(maxsize=1024)
def _opening_schedule(cron: str, zone: str) -> Schedule:
    # Checked as the window was: a stored one that never fires finds no opening (None), in one bounded step.
    return Schedule.model_construct(cron=cron, timezone=zone)


class RangeWindow(BaseModel):
    """One stretch of time, [from, to)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, serialize_by_alias=True)

    from_: CallerInstant = Field(alias="from")
    to: CallerInstant

    @model_validator(mode="after")
    def _ends_after_start(self) -> RangeWindow:
        if self.to <= self.from_:
            raise ValueError("`to` must be after `from`")
        return self

    def span_holding(self, at: datetime, zone: ZoneInfo, budget: StepBudget) -> Span | None:
        return (self.from_, self.to) if self.from_ <= at < self.to else None

    def next_start(self, at: datetime, zone: ZoneInfo, budget: StepBudget) -> datetime | None:
        return self.from_ if self.from_ > at else None


def _window_kind(value: object) -> str | None:
    """A window names its kind by its keys, so that an error names the field of that kind (`windows.0.range.to`)
    rather than every shape it failed."""
    if isinstance(value, BaseModel):
        return {DatesWindow: "dates", CronWindow: "cron", RangeWindow: "range"}.get(type(value))
    if isinstance(value, dict):
        for key, kind in (("dates", "dates"), ("cron", "cron"), ("from", "range"), ("to", "range")):
            if key in value:
                return kind
    return None


AnyWindow = Annotated[
    Annotated[DatesWindow, Tag("dates")] | Annotated[CronWindow, Tag("cron")] | Annotated[RangeWindow, Tag("range")],
    Discriminator(
        _window_kind,
        custom_error_type="window_kind",
        custom_error_message="a window is {dates}, {cron, duration_minutes} or {from, to}",
    ),
]


def _day_span(day: date, zone: ZoneInfo) -> Span:
    start = datetime(day.year, day.month, day.day)
    return resolve_wall_time(start, zone), resolve_wall_time(start + timedelta(days=1), zone)


class CalendarDefinition(BaseModel):
    """The fields a caller chooses for a calendar (the create and replace body)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    timezone: Annotated[str, WithJsonSchema(_format("time-zone", "An IANA time zone name, such as Europe/Paris."))] = (
        "UTC"
    )
    mode: CalendarMode = CalendarMode.EXCLUDE
    windows: list[AnyWindow] = Field(min_length=1, max_length=MAX_WINDOWS)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r}; use an IANA name such as Europe/Paris") from None
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def span_holding(self, at: datetime, budget: StepBudget | None = None) -> Span | None:
        """The widest of the windows' spans holding `at` (the latest end), or None."""
        zone, budget = self.zone, budget or StepBudget()
        spans = [s for w in self.windows if (s := w.span_holding(at, zone, budget)) is not None]
        return max(spans, key=lambda s: s[1]) if spans else None

    def next_window_start(self, at: datetime, budget: StepBudget | None = None) -> datetime | None:
        zone, budget = self.zone, budget or StepBudget()
        starts = [s for w in self.windows if (s := w.next_start(at, zone, budget)) is not None]
        return min(starts, default=None)

    def blocks(self, at: datetime, budget: StepBudget | None = None) -> bool:
        inside = self.span_holding(at, budget) is not None
        return inside if self.mode is CalendarMode.EXCLUDE else not inside

    def allowed_from(self, at: datetime, budget: StepBudget | None = None) -> datetime | None:
        """The first instant at or after `at` this calendar allows (`at` itself when it allows it); None when
        none comes within LOOK_AHEAD. An exclude calendar's windows that open inside one another are one
        blackout, crossed a window's end at a time. OverBudget when `budget` runs out first."""
        budget = budget or StepBudget()
        if self.mode is CalendarMode.EXCLUDE:
            zone, instant, moved = self.zone, at, True
            while moved:  # until no window holds it: each window's own chain is crossed a step at a time
                moved = False
                for window in self.windows:
                    while (span := window.span_holding(instant, zone, budget)) is not None:
                        instant, moved = span[1], True
            return instant
        if self.span_holding(at, budget) is not None:
            return at
        start = self.next_window_start(at, budget)
        return start if start is not None and start - at <= LOOK_AHEAD else None


@dataclass(frozen=True)
class BlockedSpans:
    """The spans a calendar blocks within a range, in order, clipped to it; `complete`: every one of them (else
    the answer stopped at MAX_BLOCKED_SPANS or at its step budget, and the last span may go on)."""

    spans: list[Span]
    complete: bool


def blocked_spans(calendar: CalendarDefinition, start: datetime, end: datetime) -> BlockedSpans:
    """What `calendar` blocks in [start, end): from each blocked instant to where it allows again, then on to
    where it blocks next (an exclude calendar's next window; an include calendar's window's end). Bounded: at
    most MAX_BLOCKED_SPANS spans, within OCCURRENCES_STEP_BUDGET steps."""
    budget = StepBudget(steps=OCCURRENCES_STEP_BUDGET)
    spans: list[Span] = []
    at = start
    try:
        while at < end:
            if calendar.blocks(at, budget):
                allowed = calendar.allowed_from(at, budget)
                stop = end if allowed is None else min(allowed, end)
                spans.append((at, stop))
                if len(spans) >= MAX_BLOCKED_SPANS:
                    return BlockedSpans(spans, complete=stop >= end)
                at = stop
                continue
            following = _next_blocked(calendar, at, budget)
            if following is None or following <= at:
                break
            at = following
    except OverBudget:
        return BlockedSpans(spans, complete=False)
    return BlockedSpans(spans, complete=True)


def _next_blocked(calendar: CalendarDefinition, at: datetime, budget: StepBudget) -> datetime | None:
    """Where a calendar that allows `at` blocks next: an exclude calendar's next window, an include calendar's
    window's end (the widest window holding `at`)."""
    if calendar.mode is CalendarMode.EXCLUDE:
        return calendar.next_window_start(at, budget)
    span = calendar.span_holding(at, budget)
    return None if span is None else span[1]


class Calendar(CalendarDefinition):
    """A stored calendar: its identity, its owner and its version (replaced under optimistic locking)."""

    id: str
    tenant: str
    created_at: UtcDatetime
    updated_at: UtcDatetime
    version: int = 1

    @property
    def skip_reason(self) -> SkipReason:
        return SkipReason.CALENDAR

    @property
    def on_blocked(self) -> None:
        return None  # the job's `on_blocked` says
