"""Preview (a dry run): a schedule's next occurrences, with the wall time each shows and what DST did to it.

Pure: the instants and their flags come from the walk the scheduler itself takes (Schedule.iter_flagged_after),
so a preview shows exactly what will run, DST included. Nothing is read or written.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from tickwork.model.job import Job
from tickwork.model.schedule import DstFlag, Schedule
from tickwork.model.states import JobState

MAX_PREVIEW_COUNT = 1000
DEFAULT_PREVIEW_COUNT = 5


@dataclass(frozen=True)
class PreviewedOccurrence:
    at: datetime  # UTC
    local: str  # the wall time in the schedule's zone, with its offset (RFC 3339)
    dst: DstFlag  # "gap": the wall time asked for did not exist; "fold": it is one the zone shows twice


def preview(
    schedule: Schedule, *, after: datetime, count: int, anchor: datetime, hash_key: str | None = None
) -> list[PreviewedOccurrence]:
    """The next `count` occurrences strictly after `after` (fewer when the schedule ends first).

    `anchor` and `hash_key` are the job's creation time and id, so that a rate and `H` resolve as they will run;
    a schedule not yet a job's uses `after` as its anchor (a rate then fires at after + k * period)."""
    zone = schedule.zone
    walk = schedule.iter_flagged_after(after, anchor=anchor, hash_key=hash_key)
    return [PreviewedOccurrence(at, _local(at, zone), flag) for at, flag in itertools.islice(walk, max(count, 0))]


def preview_job(job: Job, *, after: datetime, count: int) -> list[PreviewedOccurrence]:
    """A job's next occurrences, as it will run them: its own schedule, anchor and hash key. A CANCELLED or
    COMPLETED job runs nothing more, so it has none (a PAUSED or SUSPENDED one shows what runs once resumed)."""
    if job.state in (JobState.CANCELLED, JobState.COMPLETED):
        return []
    return preview(job.schedule, after=after, count=count, anchor=job.created_at, hash_key=job.id)


def _local(at: datetime, zone: ZoneInfo) -> str:
    """The wall time with its offset, to the millisecond as every instant in the API (`Z` for UTC itself)."""
    return at.astimezone(zone).isoformat(timespec="milliseconds").replace("+00:00", "Z")
