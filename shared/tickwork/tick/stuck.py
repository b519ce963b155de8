"""Stuck runs (docs/operations.md, "Stuck runs"): of the due index's entries a tick reads anyway, the runs QUEUED
longer than a threshold past their time, or RUNNING past their lease with no outcome. Pure: no read of its own.

A run without an outcome keeps its entry in the due index, and every re-send moves it at most one recovery on
(tickwork.tick.resender), so a stuck run comes due again within minutes: each tick counts the stuck runs among
the entries it read, and a 5-minute maximum of `StuckRuns` above zero sees every one of them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from tickwork.model.clock import stored_instant, to_ms
from tickwork.model.ids import ItemKind
from tickwork.model.states import RunStatus
from tickwork.store import DueItem

STUCK_QUEUED_AFTER = timedelta(minutes=5)


def stuck_runs(items: Iterable[DueItem], now: datetime, *, queued_after: timedelta = STUCK_QUEUED_AFTER) -> list[str]:
    """The run ids among `items` that are stuck at `now`."""
    now_ms = to_ms(now)
    found = []
    for item in items:
        if item.kind is not ItemKind.RUN or item.due_at > now_ms:
            continue
        status = item.attrs.get("status")
        if status == RunStatus.QUEUED.value and "scheduled_for" in item.attrs:
            stuck = stored_instant(item.attrs["scheduled_for"]) + queued_after < now
        elif status == RunStatus.RUNNING.value:
            stuck = int(item.attrs.get("lease_until_ms", now_ms)) < now_ms
        else:
            stuck = False
        if stuck:
            found.append(str(item.attrs["run_id"]))
    return found
