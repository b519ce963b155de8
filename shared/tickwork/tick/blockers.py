"""What blocks the occurrences a tick claims: the calendars its due jobs name and the freezes, read once per tick
(one BatchGetItem for the calendars, none when no due job names one; one Query for every freeze), handed to each
job's claim plan. A create's claim reads the freezes as its execution environment read them within
tickwork.store.freezes.RECENT_READ_FOR (one Query per environment per that time, not one per job).

A calendar is read at most once per tick however many jobs name it and however many occurrences it decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tickwork.model.blocking import Blocker
from tickwork.model.calendars import Calendar
from tickwork.model.claim_plan import ClaimableJob
from tickwork.model.freezes import Freeze
from tickwork.observability import logger
from tickwork.store.calendars import CalendarRecords


class BlockersUnread(Exception):
    """What could block a job could not be read this tick: it is not claimed now (it stays due)."""


@dataclass
class TickBlockers:
    """The calendars and freezes of one tick, read once (`read`), attached to each job as it is claimed."""

    calendars: dict[tuple[str, str], Calendar] = field(default_factory=dict)
    freezes: list[Freeze] = field(default_factory=list)
    unread: bool = False  # a read failed: every job waits for a later tick (a freeze may be in force)

    @classmethod
    def read(
        cls,
        calendars: CalendarRecords | None,
        freezes: Callable[[], list[Freeze]],
        keys: set[tuple[str, str]],
    ) -> TickBlockers:
        """The calendars of these (tenant, calendar id) pairs, and the freezes `freezes` reads."""
        try:
            found = calendars.get_many(keys) if keys and calendars is not None else {}
            return cls(calendars=found, freezes=freezes())
        except Exception:
            logger.exception("could not read the calendars or freezes; the due jobs wait for a later tick")
            return cls(unread=True)

    def attach(self, job: ClaimableJob) -> ClaimableJob:
        """The job with its calendars (in its own order), then the freezes over it, as its plan's blockers."""
        if self.unread:
            raise BlockersUnread(job.job_id)
        found: list[Blocker] = []
        for calendar_id in job.calendars:
            calendar = self.calendars.get((job.tenant, calendar_id))
            if calendar is None:
                logger.warning(
                    "a job names a calendar that does not exist: it blocks nothing",
                    extra={"job_id": job.job_id, "calendar_id": calendar_id},
                )
                continue
            found.append(calendar)
        tags = dict(job.tags)
        found += [f for f in self.freezes if f.applies_to(job.tenant, job.job_id, tags)]
        return replace(job, blockers=tuple(found)) if found else job
