"""`echo`: returns its payload. `fail_attempts` and `sleep_seconds` exercise retries and timeouts."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from tickwork.jobtypes.registry import RunContext, job_type
from tickwork.models import NotCoerced


class EchoPayload(BaseModel):
    model_config = ConfigDict(extra="allow")

    fail_attempts: Annotated[int, Field(ge=0, le=1000), NotCoerced] = 0
    sleep_seconds: Annotated[float, Field(ge=0, le=900), NotCoerced] = 0


class EchoFailure(RuntimeError):
    pass


@job_type("echo", EchoPayload)
def echo(payload: EchoPayload, ctx: RunContext) -> dict[str, Any]:
    """Returns the payload as the result; the first `fail_attempts` attempts raise."""
    if ctx.attempt <= payload.fail_attempts:
        raise EchoFailure(f"attempt {ctx.attempt} fails on purpose (fail_attempts={payload.fail_attempts})")
    if payload.sleep_seconds:
        ctx.sleep(payload.sleep_seconds)
    return payload.model_dump(exclude_unset=True)
