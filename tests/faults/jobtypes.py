"""Job types of the fault suite's mix; each records which attempts of which run ran to completion."""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, ConfigDict
from tickwork.jobtypes import RunContext, job_type, registry

# run id -> the attempts whose handler returned a value (ran to completion)
COMPLETIONS: defaultdict[str, list[int]] = defaultdict(list)
_lock = threading.Lock()

SLOW_SECONDS = 30  # over a third of the 60 s lease: the run beats its heartbeat once


class AnyPayload(BaseModel):
    model_config = ConfigDict(extra="allow")


class DoomedError(RuntimeError):
    pass


class FlakyError(RuntimeError):
    pass


def _completed(ctx: RunContext) -> dict[str, Any]:
    with _lock:
        COMPLETIONS[ctx.run_id].append(ctx.attempt)
    return {"run_id": ctx.run_id}


def expected_result(type_name: str, run_id: str) -> dict[str, Any] | None:
    """What the run's S3 result must hold; None: the run must fail, with no result."""
    return None if type_name == "fault-doomed" else {"run_id": run_id}


if "fault-echo" not in registry:

    @job_type("fault-echo", AnyPayload)
    def echo(payload: AnyPayload, ctx: RunContext) -> dict[str, Any]:
        return _completed(ctx)

    @job_type("fault-flaky", AnyPayload)
    def flaky(payload: AnyPayload, ctx: RunContext) -> dict[str, Any]:
        """Fails its first attempt, succeeds from the second."""
        if ctx.attempt == 1:
            raise FlakyError("first attempts fail")
        return _completed(ctx)

    @job_type("fault-doomed", AnyPayload)
    def doomed(payload: AnyPayload, ctx: RunContext) -> dict[str, Any]:
        raise DoomedError("always fails")

    @job_type("fault-slow", AnyPayload)
    def slow(payload: AnyPayload, ctx: RunContext) -> dict[str, Any]:
        """Works for SLOW_SECONDS of (fake) time, beating the heartbeat between slices."""
        ctx.sleep(SLOW_SECONDS)
        return _completed(ctx)
