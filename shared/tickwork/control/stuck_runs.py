"""Stuck runs as the API lists them (`GET /v1/runs/stuck`): a tenant's runs `StuckRunsAlarm` watches, read
from the due index's shards as the tick reads them (a Query a shard, no Scan), with the same decision
(tickwork.tick.stuck).

The list is a snapshot, oldest first, up to a limit: each tick's re-sends move the entries it is read from, so a
cursor into it would skip or repeat runs; `more` says when there may be more than it lists."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from pydantic import BaseModel, Field

from tickwork.executor.outcomes import MAX_MESSAGE_BACKOFF_SECONDS
from tickwork.model.clock import Clock, to_ms
from tickwork.model.schedule import UtcDatetime
from tickwork.store import DEFAULT_LIMIT, DueIndex
from tickwork.tick.stuck import StuckRun, stuck_read_ahead, stuck_run_of

# Entries read at most a shard, as many as a tick reads of it.
MAX_READ_PER_SHARD = 1000


class StuckRunList(BaseModel):
    as_of: UtcDatetime = Field(description="The instant the runs were found stuck at (the scheduler's clock).")
    items: list[StuckRun] = Field(description="Oldest `since` first.")
    more: bool = Field(
        description="There may be more stuck runs than listed: over `limit`, or past what one read covers."
    )


@dataclass(frozen=True)
class StuckRuns:
    due: DueIndex
    clock: Clock
    shards: int
    redispatch_after: timedelta
    retry_safety_net: timedelta  # the executor's: how long after a deferral's wait its run is looked after

    @property
    def read_ahead(self) -> timedelta:
        """Up to where a stuck run's entry may be due: a deferral on its message is looked after its wait (at
        most MAX_MESSAGE_BACKOFF_SECONDS) and the safety net on."""
        deferred_ahead = self.retry_safety_net + timedelta(seconds=MAX_MESSAGE_BACKOFF_SECONDS)
        return stuck_read_ahead(self.redispatch_after, deferred_ahead)

    def list(self, tenant: str, *, limit: int = DEFAULT_LIMIT) -> StuckRunList:
        """The tenant's stuck runs now: every shard's run entries due within the read-ahead (tick.stuck)."""
        now = self.clock.now()
        until_ms = to_ms(now + self.read_ahead)
        found: list[StuckRun] = []
        complete = True
        for shard in range(self.shards):
            items, whole = self.due.tenant_runs_due(tenant, str(shard), until_ms, max_read=MAX_READ_PER_SHARD)
            complete = complete and whole
            found.extend(run for run in (stuck_run_of(i, now) for i in items) if run is not None)
        found.sort(key=lambda run: (run.since, run.run_id))
        return StuckRunList(as_of=now, items=found[:limit], more=len(found) > limit or not complete)
