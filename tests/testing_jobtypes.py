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
    `sleep` (seconds) is slept first with ctx.sleep, so its heartbeat beats."""

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
        finally:
            with _lock:
                GATE.inside -= 1
        return {"run_id": ctx.run_id}
