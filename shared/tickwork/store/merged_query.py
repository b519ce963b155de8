"""One page, newest first, from several partitions read at once and merged: a run search's shards of the runs index
(tickwork.store.run_search), and an admin's `tenant=*` listing, every known tenant's partition of tenant-index
(tickwork.store.listings).

Every partition is read once, at the same time; then the partition whose reads stopped highest, until a page is
sure. An item is returned only when it is newer than every unread part of every partition, so pages are in order
and none is skipped, though one may be short when a selective filter spends the request's budget of queries (its
position then resumes where the reads stopped). Sort values are unique across partitions (each ends in its item's
id), so one position, the cursor's, says where every partition resumes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tickwork.store.codec import deserialize

# Partitions read at the same time; more wait for a thread.
MAX_PARALLEL_READS = 16


@dataclass(frozen=True)
class MergedPage:
    """The page's entries (as the index holds them), newest first, and the position past which the next page
    reads (None: there is none)."""

    entries: list[dict[str, Any]]
    below: str | None


@dataclass
class _Partition:
    """One partition's reads so far: its matches not yet returned, and where its reads stopped (None: read to its
    end)."""

    request: dict[str, Any]
    matches: list[dict[str, Any]] = field(default_factory=list)
    resume: dict[str, Any] | None = None
    done: bool = False


def merged_page(
    query: Callable[..., dict[str, Any]],
    requests: Sequence[dict[str, Any]],
    *,
    sort_attr: str,
    limit: int,
    budget: int,
    below: str | None = None,
) -> MergedPage:
    """The newest `limit` entries of the partitions `requests` query (each a Query's parameters, newest first, whose
    key condition reads no entry above `below`; one at `below`, the last page's last, is left out), in at most
    `budget` queries, though each partition is read at least once."""

    def sort_of(key: dict[str, Any] | None) -> str | None:
        return None if key is None else str(key[sort_attr]["S"])

    def read(partition: _Partition) -> None:
        request = dict(partition.request)
        if partition.resume is not None:
            request["ExclusiveStartKey"] = partition.resume
        answer = query(**request)
        partition.matches += [deserialize(item) for item in answer.get("Items", []) if sort_of(item) != below]
        partition.resume = answer.get("LastEvaluatedKey")
        partition.done = partition.resume is None

    def frontier() -> str | None:
        """The highest position any partition has not read past: every entry above it has been read in every
        partition (None: every partition read to its end)."""
        stops = [sort_of(p.resume) for p in partitions if not p.done]
        return max((stop for stop in stops if stop is not None), default=None)

    partitions = [_Partition(request) for request in requests]
    if not partitions:
        return MergedPage([], None)
    with ThreadPoolExecutor(max_workers=min(len(partitions), MAX_PARALLEL_READS)) as pool:
        list(pool.map(read, partitions))
    queries = len(partitions)
    while True:
        stop = frontier()
        ready = sorted(
            (m for p in partitions for m in p.matches if stop is None or m[sort_attr] >= stop),
            key=lambda m: m[sort_attr],
            reverse=True,
        )
        if len(ready) > limit:
            return MergedPage(ready[:limit], ready[limit - 1][sort_attr])
        if stop is None:
            return MergedPage(ready, None)
        if queries >= budget:
            # The budget is spent: what is sure now, and a position past everything every partition has read.
            return MergedPage(ready, stop)
        read(next(p for p in partitions if not p.done and sort_of(p.resume) == stop))
        queries += 1
