"""Preview (a dry run): a schedule's next occurrences, with the wall time each shows and what DST did to it.

Pure: the instants and their flags come from the walk the scheduler itself takes (Schedule.iter_flagged_after),
so a preview shows exactly what will run, DST included. Nothing is read or written.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

from tickwork.model.blocking import Block, Blocker, OnBlocked, block_at
from tickwork.model.budget import OCCURRENCES_STEP_BUDGET, StepBudget
from tickwork.model.claim_plan import CATCHUP_KEEP
from tickwork.model.job import Job
from tickwork.model.policies import CatchupPolicy
from tickwork.model.schedule import DstFlag, Schedule
from tickwork.model.states import JobState, SkipReason

MAX_PREVIEW_COUNT = 1000
DEFAULT_PREVIEW_COUNT = 5


@dataclass(frozen=True)
class BlockedOccurrence:
    """What a calendar (or a freeze) does to a previewed occurrence: skipped, or run at `runs_at`."""

    reason: SkipReason
    by: str
    then: Literal["skip", "defer"]
    runs_at: datetime | None  # deferred: the block's end; None when skipped


@dataclass(frozen=True)
class PreviewedOccurrence:
    at: datetime  # UTC
    local: str  # the wall time in the schedule's zone, with its offset (RFC 3339)
    dst: DstFlag  # "gap": the wall time asked for did not exist; "fold": it is one the zone shows twice
    blocked: BlockedOccurrence | None = None


def preview(
    schedule: Schedule, *, after: datetime, count: int, anchor: datetime, hash_key: str | None = None
) -> list[PreviewedOccurrence]:
    """The next `count` occurrences strictly after `after` (fewer when the schedule ends first).

    `anchor` and `hash_key` are the job's creation time and id, so that a rate and `H` resolve as they will run;
    a schedule not yet a job's uses `after` as its anchor (a rate then fires at after + k * period)."""
    zone = schedule.zone
    walk = schedule.iter_flagged_after(after, anchor=anchor, hash_key=hash_key)
    return [PreviewedOccurrence(at, _local(at, zone), flag) for at, flag in itertools.islice(walk, max(count, 0))]


def preview_job(
    job: Job, *, after: datetime, count: int, blockers: tuple[Blocker, ...] = ()
) -> list[PreviewedOccurrence]:
    """A job's next occurrences, as it will run them: its own schedule, anchor and hash key, each marked when
    `blockers` (its calendars) block it. A CANCELLED or COMPLETED job runs nothing more, so it has none (a PAUSED
    or SUSPENDED one shows what runs once resumed)."""
    if job.state in (JobState.CANCELLED, JobState.COMPLETED):
        return []
    found = preview(job.schedule, after=after, count=count, anchor=job.created_at, hash_key=job.id)
    return mark_blocked(found, blockers, job.on_blocked, job.catchup) if blockers else found


def mark_blocked(
    found: list[PreviewedOccurrence], blockers: tuple[Blocker, ...], on_blocked: OnBlocked, catchup: CatchupPolicy
) -> list[PreviewedOccurrence]:
    """Each blocked occurrence marked with what the claim will do (tickwork.model.claim_plan): skipped, or with
    DEFER run at its block's end, a stretch blocked until the same end collapsed by the catch-up policy (its
    latest ones run, as far as the previewed occurrences show; the rest are skipped). Its calendars' work is
    within OCCURRENCES_STEP_BUDGET cron steps: past it, only the occurrences marked by then are answered."""
    work = StepBudget(OCCURRENCES_STEP_BUDGET)
    blocks: list[Block | None] = []
    for occurrence in found:
        if work.spent_all:
            found = found[: len(blocks)]
            break
        budget = StepBudget()
        blocks.append(block_at(occurrence.at, blockers, budget))
        work.spent += budget.spent
    keep = CATCHUP_KEEP[catchup]
    marked: list[PreviewedOccurrence] = []
    for index, (occurrence, block) in enumerate(zip(found, blocks, strict=True)):
        if block is None:
            marked.append(occurrence)
            continue
        later_same = sum(1 for b in blocks[index + 1 :] if b is not None and b.until == block.until)
        defer = block.deferred(on_blocked) and later_same < keep  # a freeze's own policy, else the job's
        then: Literal["skip", "defer"] = "defer" if defer else "skip"
        blocked = BlockedOccurrence(block.reason, block.by, then, block.until if defer else None)
        marked.append(replace(occurrence, blocked=blocked))
    return marked


def _local(at: datetime, zone: ZoneInfo) -> str:
    """The wall time with its offset, to the millisecond as every instant in the API (`Z` for UTC itself)."""
    return at.astimezone(zone).isoformat(timespec="milliseconds").replace("+00:00", "Z")
