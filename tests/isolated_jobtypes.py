"""Function-isolated job types for the isolation tests (docs/security.md, "Isolation of job code"): the durable runs'
long export, run in the job sandbox instead of the executor, and a handler that does what a test asks of it while it
runs there (fails in a given way, or lets a test act in the middle of its segment)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel
from tickwork.jobtypes import (
    EffectMayContinue,
    PermanentJobError,
    RetryNotBefore,
    RunContext,
    RunTimeout,
    job_type,
    registry,
)
from tickwork.model.policies import NotCoerced
from tickwork.model.secret_references import SecretOrStr, revealed

from tests.durable_jobtypes import LongExport, long_export

# Per run: what each segment saw when it started (its attempt, its checkpoint), in order.
SEEN: dict[str, list[dict[str, Any]]] = {}
# Per run: the sha256 of the token its handler was given (a secret's value, when the payload names one).
TOKENS_SEEN: dict[str, str] = {}
# A test's own step in the middle of a segment, by run id: called with the segment's ctx.
DURING: dict[str, Callable[[RunContext], None]] = {}

if "isolated-long-export" not in registry:
    job_type("isolated-long-export", LongExport, isolation="function")(long_export)


class Asked(BaseModel):
    fail: str = ""  # "", "plain", "permanent", "retry-not-before", "effect-may-continue", "timeout"
    fail_attempts: Annotated[int, NotCoerced] = 0  # the first this many attempts fail as `fail` says
    token: SecretOrStr = ""  # logged, checkpointed, reported and returned (a secret's value, when it is a reference)


class AskedFailure(RuntimeError):
    pass


_FAILURES: dict[str, Callable[[str], Exception]] = {
    "plain": AskedFailure,
    "permanent": PermanentJobError,
    "retry-not-before": lambda message: RetryNotBefore(message, wait_seconds=30),
    "effect-may-continue": lambda message: EffectMayContinue(message, busy_seconds=120),
    "timeout": RunTimeout,
}

if "isolated-asked" not in registry:

    @job_type("isolated-asked", Asked, isolation="function")
    def asked(payload: Asked, ctx: RunContext) -> dict[str, Any]:
        """Checkpoints, reports and logs, lets a test act (DURING), then fails or returns as asked."""
        SEEN.setdefault(ctx.run_id, []).append({"attempt": ctx.attempt, "checkpoint": ctx.last_checkpoint()})
        token = revealed(payload.token)
        TOKENS_SEEN[ctx.run_id] = hashlib.sha256(token.encode()).hexdigest()
        ctx.log("segment started", attempt=ctx.attempt, token=token)
        ctx.checkpoint({"attempt": ctx.attempt, "token": token})
        ctx.progress(0.5, f"half way, token {token}")
        if ctx.run_id in DURING:
            DURING[ctx.run_id](ctx)
        if payload.fail and ctx.attempt <= payload.fail_attempts:
            raise _FAILURES[payload.fail](f"attempt {ctx.attempt} fails as asked ({payload.fail}) {token}")
        return {"attempt": ctx.attempt, "token": token}


if "inline-asked" not in registry:
    # The same handler, run in the executor: what isolation costs is the difference.
    job_type("inline-asked", Asked)(asked)
