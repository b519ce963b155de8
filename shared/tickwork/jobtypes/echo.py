"""`echo`: returns its payload. `fail_attempts` and `sleep_seconds` exercise retries and timeouts, `log` the run's
log (each string one line, logged before anything else, so a failing attempt keeps its lines too)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from tickwork.jobtypes.registry import RunContext, job_type
from tickwork.model.policies import NotCoerced

# A line of the run's log, and how many: the run log's own caps (tickwork.jobtypes.run_log) bound what is kept.
EchoLogLine = Annotated[str, Field(max_length=4096)]


class EchoPayload(BaseModel):
    model_config = ConfigDict(extra="allow")

    fail_attempts: Annotated[int, Field(ge=0, le=1000), NotCoerced] = 0
    sleep_seconds: Annotated[float, Field(ge=0, le=900), NotCoerced] = 0
    log: Annotated[list[EchoLogLine], Field(max_length=1000)] = Field(default_factory=list)


class EchoFailure(RuntimeError):
    pass


@job_type("echo", EchoPayload)
def echo(payload: EchoPayload, ctx: RunContext) -> dict[str, Any]:
    """Returns the payload as the result; logs each string of `log`; the first `fail_attempts` attempts raise."""
    for line in payload.log:
        ctx.log(line)
    if ctx.attempt <= payload.fail_attempts:
        raise EchoFailure(f"attempt {ctx.attempt} fails on purpose (fail_attempts={payload.fail_attempts})")
    if payload.sleep_seconds:
        ctx.sleep(payload.sleep_seconds)
    return payload.model_dump(exclude_unset=True)
