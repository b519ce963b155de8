"""`echo`: returns its payload. `fail_attempts` and `sleep_seconds` exercise retries and timeouts."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tickwork.jobtypes.registry import RunContext, job_type


class EchoPayload(BaseModel):
    model_config = ConfigDict(extra="allow")

    fail_attempts: int = Field(default=0, ge=0, le=1000)
    sleep_seconds: float = Field(default=0, ge=0, le=900)


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
