"""Debounced triggers (docs/fairness.md, "Debounce"): triggers of a job with the same debounce key within its
window collapse into one run at the window's end, carrying the last trigger's payload (or, collecting, all of
them: `{"payloads": [...]}`, at most MAX_COLLECTED_PAYLOADS and MAX_COLLECTED_BYTES).

Exactly one run per window, however many triggers race (tickwork.store.debounce): the window item is the lock,
opened by one conditional put; the window's run is created only if absent (whoever gets there first, the opener
or a joiner, creates it; the others join it), and every join is a conditional update of the run that holds only
while it is QUEUED before its window's end and unchanged since it was read. A trigger that finds the window's run
closed (leased, or full) opens the next window in its place. Each trigger's writes carry its token, so one the
SDK sent again after its answer was lost is not made twice (tickwork.store.debounce).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from tickwork.model.clock import Clock, from_ms
from tickwork.model.errors import Conflict
from tickwork.model.ids import run_id_for
from tickwork.model.job import Job
from tickwork.model.policies import (
    MAX_COLLECTED_BYTES,
    MAX_COLLECTED_PAYLOADS,
    Debounce,
    DebounceWindow,
)
from tickwork.model.run import Run, manual_run
from tickwork.model.states import RunStatus, RunTrigger
from tickwork.observability import logger, metrics
from tickwork.store import RunRecords
from tickwork.store.debounce import DebounceWindows, trigger_token
from tickwork.tick.dispatch import Dispatcher
from tickwork.tick.sender import outgoing_for

ATTEMPTS = 20  # lost races one trigger rides out: each means another trigger changed the window or its run


class WindowVerdict(StrEnum):
    STARTED = "started"  # this trigger opened the window
    JOINED = "joined"  # it joined an open window's run


def joinable(run: Run | None, key: str, now: datetime) -> bool:
    """A window's run a trigger may still join: QUEUED, before its window's end, of this key."""
    return (
        run is not None
        and run.status is RunStatus.QUEUED
        and run.debounce is not None
        and run.debounce.key == key
        and run.not_before is not None
        and run.not_before > now
    )


def joined_payload(run: Run, payload: dict[str, Any]) -> dict[str, Any] | None:
    """What the window's run carries once `payload` joins it: that payload (the last wins), or, collecting, every
    payload so far and this one; None when a collecting window is full (the trigger opens the next)."""
    assert run.debounce is not None
    if not run.debounce.collect:
        return payload
    collected = [*(run.payload or {}).get("payloads", []), payload]
    if len(collected) > MAX_COLLECTED_PAYLOADS:
        return None
    together = {"payloads": collected}
    if len(json.dumps(together, separators=(",", ":")).encode()) > MAX_COLLECTED_BYTES:
        return None
    return together


@dataclass(frozen=True)
class DebouncedTriggers:
    runs: RunRecords
    windows: DebounceWindows
    dispatcher: Dispatcher
    clock: Clock

    def trigger(
        self,
        job: Job,
        debounce: Debounce,
        payload: dict[str, Any],
        *,
        audit: Callable[[Run], dict[str, Any] | None] = lambda run: None,
    ) -> tuple[Run, WindowVerdict]:
        """The run of the window this trigger falls in, and whether it opened that window or joined it. `audit`:
        the trigger's audit item, of the run it creates or joins, written with that write."""
        now = self.clock.now()
        token = secrets.token_hex(8)  # this trigger's, in each of its writes
        found_closed: str | None = None
        for attempt in range(ATTEMPTS):
            ends = now + timedelta(seconds=debounce.seconds)
            candidate = run_id_for(job.id, ends + timedelta(milliseconds=attempt), RunTrigger.MANUAL)
            opened, seen = self.windows.open(
                job.id,
                debounce.key,
                run_id=candidate,
                ends=ends,
                collect=debounce.collect,
                now=now,
                token=token,
                replacing=found_closed,
            )
            verdict = WindowVerdict.STARTED if opened else WindowVerdict.JOINED
            window = (
                DebounceWindow(key=debounce.key, collect=debounce.collect)
                if opened
                else DebounceWindow(key=debounce.key, collect=bool(seen.get("collect")))
            )
            run_id, run_ends = (candidate, ends) if opened else (str(seen["run_id"]), from_ms(int(seen["ends_ms"])))
            first = self._first_run(job, run_id, run_ends, window, payload, now, token, audit)
            if first is not None:
                self._count(verdict)
                return first, verdict
            joined = self._join(run_id, debounce.key, payload, now, token, audit)
            if joined is not None:
                self._count(verdict)
                return joined, verdict
            found_closed = run_id  # leased, ended or full: the next window opens in its place
        raise Conflict("the debounce window kept changing under this trigger; try again")

    def _first_run(
        self,
        job: Job,
        run_id: str,
        ends: datetime,
        window: DebounceWindow,
        payload: dict[str, Any],
        now: datetime,
        token: str,
        audit: Callable[[Run], dict[str, Any] | None],
    ) -> Run | None:
        """The window's run, created with this trigger's payload if it does not exist yet, and sent to start at
        the window's end; None if it exists (created by another trigger of the window)."""
        run = manual_run(
            job,
            at=ends,
            now=now,
            not_before=ends,
            debounce=window,
            payload={"payloads": [payload]} if window.collect else payload,
        ).model_copy(update={"id": run_id})
        redispatch_at = ends + self.dispatcher.redispatch_after
        if not self.runs.put_queued_run(
            run, redispatch_at=redispatch_at, audit=audit(run), own=trigger_token(1, token)
        ):
            return None
        self.dispatcher.sender.send([outgoing_for(run, start_at=ends)])
        logger.info("debounce window opened", extra={"run_id": run.id, "key": window.key, "ends_at": ends})
        return run

    def _join(
        self,
        run_id: str,
        key: str,
        payload: dict[str, Any],
        now: datetime,
        token: str,
        audit: Callable[[Run], dict[str, Any] | None],
    ) -> Run | None:
        """The window's run with this trigger's payload in it; None if it can no longer be joined. Conflict if it
        still could but every join lost: the run is open, so opening the next window would give this one two runs
        (in RegionMode strong a join also loses to another's change not yet confirmed, its audit mark)."""
        current = self.runs.get_run(run_id)
        for _ in range(ATTEMPTS):
            if current is None or not joinable(current, key, now):
                return None
            carried = joined_payload(current, payload)
            if carried is None:
                return None
            won, current = self.windows.join(current, key, carried, now=now, token=token, audit=audit(current))
            if won:
                return current
        if current is None or not joinable(current, key, now):
            return None
        raise Conflict("the debounce window's run kept changing under this trigger; try again")

    @staticmethod
    def _count(verdict: WindowVerdict) -> None:
        metrics.add_metric(
            name="TriggersDebounced" if verdict is WindowVerdict.JOINED else "DebounceWindows", unit="Count", value=1
        )
