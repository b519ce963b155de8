"""A job type for tests that counts how often each run's handler really executed."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict
from tickwork.jobtypes import RunContext, job_type, registry

EXECUTIONS: Counter[str] = Counter()
_lock = threading.Lock()


class CountingPayload(BaseModel):
    model_config = ConfigDict(extra="allow")


if "counting" not in registry:

    @job_type("counting", CountingPayload)
    def counting(payload: CountingPayload, ctx: RunContext) -> dict[str, Any]:
        with _lock:
            EXECUTIONS[ctx.run_id] += 1
        return {"run_id": ctx.run_id, **payload.model_dump()}


class Gate:
    """Where `gated` handlers wait: how many are inside at once (and the most ever), and when each started
    (on the run's clock). Handlers pass once `opened` is set; a test resets it between cases. A payload's
    `sleep` (seconds) is slept first with ctx.sleep, so its heartbeat beats; its `sleep_after` after the gate
    (a handler waiting at the gate is a starved process: it beats not at all)."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.starts: dict[str, Any] = {}
        self.opened = threading.Event()

    def reset(self, *, opened: bool) -> None:
        with _lock:
            self.inside = self.most = 0
            self.starts = {}
            if opened:
                self.opened.set()
            else:
                self.opened.clear()


GATE = Gate()


if "gated" not in registry:

    @job_type("gated", CountingPayload)
    def gated(payload: CountingPayload, ctx: RunContext) -> dict[str, Any]:
        with _lock:
            GATE.inside += 1
            GATE.most = max(GATE.most, GATE.inside)
            GATE.starts[ctx.run_id] = ctx.clock.now()
        try:
            seconds = (payload.model_extra or {}).get("sleep")
            if seconds:
                ctx.sleep(seconds)  # on the run's clock, beating the heartbeat (a fake clock just moves)
            GATE.opened.wait(timeout=10)  # an event, not a sleep: the test opens it
            after = (payload.model_extra or {}).get("sleep_after")
            if after:
                ctx.sleep(after)
        finally:
            with _lock:
                GATE.inside -= 1
        return {"run_id": ctx.run_id}


class OverlapProbe:
    """Where `overlap_probe` handlers record when each run really ran, on the run's clock: [start, end) by run
    id. A handler runs until the clock has moved `hold_seconds` past its start (it waits for the test to move
    the clock, never moves it itself), watching ctx.cancelled and beating its heartbeat as it waits. `seen`
    holds, for each handler now waiting, the clock time it last looked at: a test moves the clock, then waits
    until every live handler has seen the new time (or ended) before it acts again, so runs interleave as the
    clock says, not as threads happen to."""

    def __init__(self) -> None:
        self.intervals: dict[str, list[Any]] = {}
        self.seen: dict[str, Any] = {}

    def reset(self) -> None:
        with _lock:
            self.intervals = {}
            self.seen = {}

    def most_at_once(self) -> int:
        """How many runs ran at the same instant, at most (an interval ends before the next one at its end
        starts)."""
        edges = sorted(
            [(start, 1) for start, _ in self.intervals.values()] + [(end, -1) for _, end in self.intervals.values()],
            key=lambda edge: (edge[0], edge[1]),
        )
        inside = most = 0
        for _, step in edges:
            inside += step
            most = max(most, inside)
        return most


PROBE = OverlapProbe()


if "overlap_probe" not in registry:

    @job_type("overlap_probe", CountingPayload)
    def overlap_probe(payload: CountingPayload, ctx: RunContext) -> dict[str, Any]:
        start = ctx.clock.now()
        hold = float((payload.model_extra or {}).get("hold_seconds", 0))
        with _lock:
            PROBE.intervals[ctx.run_id] = [start, None]
        try:
            while True:
                now = ctx.clock.now()
                ctx.check()
                if (now - start).total_seconds() >= hold:
                    return {"run_id": ctx.run_id}
                if ctx.on_tick is not None:
                    ctx.on_tick()
                ctx.check()
                with _lock:
                    PROBE.seen[ctx.run_id] = now
                ctx.cancelled.wait(0.002)  # real time: the test moves the clock
        finally:
            with _lock:
                PROBE.intervals[ctx.run_id][1] = ctx.clock.now()
                PROBE.seen.pop(ctx.run_id, None)
