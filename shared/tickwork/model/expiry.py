"""Expiry without TTL (RegionMode strong: an MRSC global table has no Time to Live, docs/regions.md): which expiry
bucket an item's `expires_at` puts it in, which buckets a sweep reads, how far its cursor moves, and its budget.

An item that expires carries `expiry_bucket` = `X#<UTC hour of expires_at>#<shard>`, the partition key of the sparse
expiry index (sort key `expires_at`). The shard, a stable hash of the item's key, spreads one hour's index writes
(and the sweep's reads) over `EXPIRY_SHARDS` partitions. The tick sweeps whole hours, oldest first, from a cursor
(the first hour not known to be empty) up to the last hour ended SWEEP_LAG ago, and moves the cursor past an hour
only once a sweep found it empty: an hour whose entries it deleted is read once more, by a later tick, before it is
passed. Never an hour the cursor has passed: an expiry already past when written is bucketed in the writer's hour.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

EXPIRY_INDEX = "expiry-index"
EXPIRY_BUCKET = "expiry_bucket"  # the index's partition key; its sort key is `expires_at` (epoch seconds)
# Fixed: the sweep reads every shard of an hour, so a bucket written under another count would never be read.
EXPIRY_SHARDS = 8
HOUR_SECONDS = 3600
# The tick's timeout is 55 s (template.yaml, TickFunction): a sweep ends by this far into its tick, whatever its
# own budget, so that a long claim leaves it less time, never the tick too little.
TICK_SECONDS = 45.0
# An hour is swept only this long after it ended: a writer's clock may be behind the tick's, and an index entry
# appears after its item's write, so a bucket of the hour just ended may still be filling.
SWEEP_LAG = timedelta(minutes=5)


def expiry_hour(expires_at: int) -> int:
    """The hour (since the epoch, UTC) an expiry falls in."""
    return expires_at // HOUR_SECONDS


def bucket_name(hour: int, shard: int) -> str:
    return f"X#{datetime.fromtimestamp(hour * HOUR_SECONDS, tz=UTC):%Y-%m-%dT%H}#{shard}"


def expiry_bucket(pk: str, sk: str, expires_at: int, *, written_at: int | None = None) -> str:
    """The bucket of an item (by its key) that expires at `expires_at`, written at `written_at` (epoch seconds): an
    expiry in an hour before the write's goes in the write's hour, which the cursor cannot have passed."""
    shard = zlib.crc32(f"{pk}\x00{sk}".encode()) % EXPIRY_SHARDS
    hour = expiry_hour(expires_at) if written_at is None else max(expiry_hour(expires_at), expiry_hour(written_at))
    return bucket_name(hour, shard)


def buckets_of(hour: int) -> list[str]:
    """Every bucket of an hour, the order a sweep reads them in."""
    return [bucket_name(hour, shard) for shard in range(EXPIRY_SHARDS)]


@dataclass(frozen=True)
class SweepBudget:
    """What one tick's sweep may spend: the rest waits for the next minute."""

    deletes: int = 2000  # conditional DeleteItems (each 1 WRU per replica, like any delete)
    seconds: float = 10.0  # of the tick's 55 s, after its claim
    hours: int = 48  # hours read per tick: a backlog (a tick stopped for days) is caught up two days a minute

    def within_tick(self, spent: float) -> SweepBudget:
        """This budget for a sweep that starts `spent` seconds into its tick."""
        return replace(self, seconds=max(0.0, min(self.seconds, TICK_SECONDS - spent)))

    def deletes_left(self, deleted: int, elapsed: float) -> int:
        """How many more deletes the sweep may send now (0: stop)."""
        if elapsed >= self.seconds:
            return 0
        return max(0, self.deletes - deleted)


def hours_to_sweep(swept_before: int | None, now: datetime, budget: SweepBudget) -> range:
    """The hours a sweep reads, oldest first: from the cursor (no cursor yet: the previous hour) up to the last hour
    ended SWEEP_LAG before now, at most `budget.hours` of them. Empty while the cursor is past it."""
    current = expiry_hour(int((now - SWEEP_LAG).timestamp()))
    start = current - 1 if swept_before is None else swept_before
    return range(start, max(start, min(current, start + budget.hours)))


def swept_past(hours: range, found_empty: Sequence[bool]) -> int:
    """The cursor after a sweep of `hours` whose first hours it found empty or not (`found_empty`, one per hour read,
    in order; an hour not read to its end is not empty): past the leading empty ones."""
    passed = 0
    for empty in found_empty:
        if not empty:
            break
        passed += 1
    return hours.start + passed
