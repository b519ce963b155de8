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
