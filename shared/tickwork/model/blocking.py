"""Blocked occurrences: whether a job's calendars or a freeze keep an occurrence from running, and until when.

Pure (no I/O): the tick reads the calendars and freezes once per tick and hands each job the ones that apply to
it (`Blockers`); the claim plan (tickwork.model.claim_plan) and the preview ask this module about each occurrence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Protocol

from pydantic import AfterValidator, Field

from tickwork.model.calendars import MAX_CALENDARS_PER_JOB
from tickwork.model.states import SkipReason

# How many times the search for the first allowed instant may move past one blocker into another (an exclude
# window ending inside another calendar's, a freeze ending inside a window): past it, the occurrence is treated
# as never allowed, which no sane set of calendars reaches.
MAX_HOPS = 64


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

    def blocks(self, at: datetime) -> bool: ...

    def allowed_from(self, at: datetime) -> datetime | None:
        """The first instant at or after `at` it allows; None: none it can name (never, as far as it knows)."""
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
        return (self.on_blocked or job_policy) is OnBlocked.DEFER


def first_allowed(at: datetime, blockers: tuple[Blocker, ...]) -> datetime | None:
    """The first instant at or after `at` that no blocker blocks; None when none comes."""
    instant = at
    for _ in range(MAX_HOPS):
        moved = False
        for blocker in blockers:
            allowed = blocker.allowed_from(instant)
            if allowed is None:
                return None
            if allowed > instant:
                instant, moved = allowed, True
        if not moved:
            return instant
    return None


def block_at(at: datetime, blockers: tuple[Blocker, ...]) -> Block | None:
    """The block on the occurrence at `at`, or None when it may run."""
    first = next((b for b in blockers if b.blocks(at)), None)
    if first is None:
        return None
    return Block(first.skip_reason, first.id, first_allowed(at, blockers), first.on_blocked)
