"""How an audited change's pending record is settled, without a transaction (RegionMode strong,
tickwork.store.pending_audits): from what its target item says once its request has surely ended. Pure: the record's
state and the item's mark are given.

The change marks its item with its record in the same write (a Delete: its mark first, the record then told
`marked`, then the delete), so the mark proves the change happened; no mark, and no `marked` delete, proves it did
not: its request died before, or its condition failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

# How long a request that makes an audited write may still be running: the longest timeout of the functions that
# make them (template.yaml: the executor's ExecutorTimeoutSeconds, at most 900 s, which is also Lambda's ceiling;
# the API's 10 s, the tick's and the dispatch's 55 s), and a minute for the clocks of two functions. A record
# younger than this may be its running request's: it is not settled.
SETTLES_AFTER = timedelta(seconds=900 + 60)


class Settlement(StrEnum):
    CONFIRMED = "confirmed"  # confirmed before: nothing to do
    NOT_HAPPENED_BEFORE = "not_happened_before"  # settled before as not happened: nothing to do
    YOUNG = "young"  # its request may still be running: left pending
    CONFIRM = "confirm"  # the change happened: the record confirmed, then the item's mark cleared
    FINISH_DELETE = "finish_delete"  # a delete decided (its item marked) and not done: the item deleted, confirmed
    NOT_HAPPENED = "not_happened"  # the record settled as not happened: never listed


@dataclass(frozen=True)
class PendingState:
    """What a settle reads: the record (pending still; settles after; its operation; a delete told `marked`;
    settled as not happened) and whether its target item carries its mark."""

    pending: bool
    settles_after: datetime
    operation: str
    told_marked: bool
    item_marked: bool
    settled: bool = False  # settled as not happened before


def settlement(state: PendingState, now: datetime) -> Settlement:
    """What settles a pending record at `now`."""
    if not state.pending:
        return Settlement.CONFIRMED
    if state.settled:
        return Settlement.NOT_HAPPENED_BEFORE
    if state.settles_after > now:
        return Settlement.YOUNG
    if state.item_marked:
        return Settlement.FINISH_DELETE if state.operation == "Delete" else Settlement.CONFIRM
    if state.operation == "Delete" and state.told_marked:
        return Settlement.CONFIRM  # marked, then deleted: its request died before the confirm
    return Settlement.NOT_HAPPENED
