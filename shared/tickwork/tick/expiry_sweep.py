"""Expiry without TTL (RegionMode strong; docs/regions.md): every minute the tick deletes the items whose
`expires_at` has passed, hour by hour from its cursor through the expiry index (tickwork.model.expiry decides the
hours, the buckets and the budget; tickwork.store.expiry reads and deletes). Each delete is conditional
(`expires_at < now`): an item whose expiry was moved on or removed since the index was read survives.

Requests per tick: one GetItem (the cursor); a Query per bucket read (8 an hour, eventually consistent, KEYS_ONLY);
a DeleteItem per expired item, up to the budget (SweepBudget: 2000 deletes, 10 s, and never past 45 s into the
tick; the rest next minute), sent from a few threads; an UpdateItem when the cursor moves. Caught up, the cursor is at the current hour and a tick
sends only the GetItem. A failure is logged and counted (ExpirySweepFailures), never the tick's: the next minute
goes on from the cursor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tickwork.model.clock import Clock
from tickwork.model.expiry import SweepBudget, buckets_of, hours_to_sweep, swept_past
from tickwork.observability import logger, metrics
from tickwork.store.expiry import ExpiredItems

# Deletes in flight at once: in MRSC each is a round trip to another region (tens of ms).
DELETE_THREADS = 8
PAGE = 100  # keys read per Query at most


class ExpirySweep:
    def __init__(
        self,
        items: ExpiredItems,
        clock: Clock,
        budget: SweepBudget | None = None,
        *,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.items, self.clock, self.budget, self.timer = items, clock, budget or SweepBudget(), timer

    def sweep(self, *, spent_seconds: float = 0.0) -> int:
        """Delete what has expired, within the budget (less what the tick has `spent_seconds` of its time); how many
        items this call deleted. Never raises."""
        progress = _Progress(self.budget.within_tick(spent_seconds), self.timer)
        try:
            self._sweep(progress)
        except Exception:
            logger.exception("the expiry sweep failed; the next tick goes on from its cursor")
            metrics.add_metric(name="ExpirySweepFailures", unit="Count", value=1)
        metrics.add_metric(name="ExpiredItemsDeleted", unit="Count", value=progress.deleted)
        return progress.deleted

    def _sweep(self, progress: _Progress) -> None:
        if progress.left() == 0:  # no time left in this tick
            return
        now = self.clock.now()
        now_s = int(now.timestamp())
        cursor = self.items.swept_before()
        hours = hours_to_sweep(cursor, now, progress.budget)
        found_empty: list[bool] = []
        with ThreadPoolExecutor(max_workers=DELETE_THREADS, thread_name_prefix="expiry") as pool:
            for hour in hours:
                empty = self._sweep_hour(hour, now_s, progress, pool)
                found_empty.append(empty)
                if progress.left() == 0:
                    break
        moved_to = swept_past(hours, found_empty)
        if hours and (cursor is None or moved_to != cursor):
            self.items.move_cursor(cursor, moved_to)
        logger.info(
            "expired items swept",
            extra={"deleted": progress.deleted, "kept": progress.kept, "from_hour": hours.start, "to_hour": moved_to},
        )

    def _sweep_hour(self, hour: int, now_s: int, progress: _Progress, pool: ThreadPoolExecutor) -> bool:
        """Read every bucket of the hour, deleting what it holds; True if the hour was read to its end and held
        nothing."""
        empty = True
        for bucket in buckets_of(hour):
            start: dict[str, Any] | None = None
            while True:
                left = progress.left()
                if left == 0:
                    return False
                keys, start = self.items.expired(bucket, now_s, limit=min(left, PAGE), start=start)
                empty = empty and not keys
                for deleted in pool.map(lambda key: self.items.delete_expired(key, now_s), keys):
                    progress.count(deleted)
                if start is None:
                    break
        return empty


class _Progress:
    """The deletes sent so far (won and lost) against the budget."""

    def __init__(self, budget: SweepBudget, timer: Callable[[], float]) -> None:
        self.budget, self.timer = budget, timer
        self.started = timer()
        self.deleted = 0
        self.kept = 0  # deletes refused: the item was gone, or its expiry moved

    def count(self, deleted: bool) -> None:
        if deleted:
            self.deleted += 1
        else:
            self.kept += 1

    def left(self) -> int:
        return self.budget.deletes_left(self.deleted + self.kept, self.timer() - self.started)
