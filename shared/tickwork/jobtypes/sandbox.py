"""The job sandbox: a function-isolated job type's handler (`isolation="function"`), run for one segment of its run in
a Lambda function of its own (JobSandboxFunction), whose role reaches none of Tickwork's table, queues or bucket.

The executor keeps the run: it leases it, beats its heartbeat, bounds its time, and records its outcome; it invokes
the sandbox synchronously with a `SandboxRequest` (tickwork.executor.isolation). Here the handler gets the same ctx as
inline, but what ctx would write goes into the answer instead: the checkpoint (the whole document, when the segment
saved one), the last progress report, the lines logged, and how the handler ended (its value, a yield, or its error
and what kind of error it was). The executor applies them under its lease, as if the handler had run in its own
process; it reads the answer as untrusted input (job code runs in this process and could forge one), so each part is
bounded here by the model and checked again by what applies it (the checkpoint's and progress's own limits).

What crosses only at a segment's ends: the sandbox cannot see a cancellation or a lost lease while it runs (it
stops at its deadline, or when it yields), and a checkpoint it saves is durable when the invocation answers, not
when `ctx.checkpoint` returns: a sandbox that dies mid-segment (out of memory, its own timeout) loses the segment's
checkpoints and its steps run again.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tickwork.jobtypes.durable import (
    MAX_CHECKPOINT_BYTES,
    InMemoryCheckpoints,
    KeptProgress,
    RunCheckpoints,
    Yielded,
)
from tickwork.jobtypes.registry import (
    EffectMayContinue,
    Isolation,
    JobTypeRegistry,
    PermanentJobError,
    RetryNotBefore,
    RunContext,
    RunTimeout,
    UnknownJobType,
)
from tickwork.jobtypes.run_log import LEVELS, LIMIT_LINES
from tickwork.model.clock import Clock
from tickwork.model.targets import TargetRules
from tickwork.observability import logger, secret_mask

MAX_ERROR_CHARS = 2000  # as the executor keeps a run's error message
_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,99}$"

ErrorKind = Literal["failure", "permanent", "retry_not_before", "effect_may_continue", "timeout"]


class SandboxRequest(BaseModel):
    """One segment of a run, as the executor sends it: what the handler runs on, and the ctx it starts from. Its
    payload has the run's secrets in place (`hidden`: their values, masked in the sandbox's log lines)."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1, max_length=100)
    payload: dict[str, Any]
    run_id: str = Field(min_length=1, max_length=200)
    job_id: str = Field(min_length=1, max_length=200)
    tenant: str = Field(min_length=1, max_length=200)
    attempt: int = Field(ge=1)
    seconds: float = Field(ge=0, le=900)  # the segment's time, from when the sandbox starts it
    yield_after: float | None = Field(default=None, ge=0, le=900)  # when should_yield() turns true (None: never)
    checkpoint: dict[str, Any] | None = None  # the run's checkpoint document, as the lease found it
    hidden: list[str] = Field(default_factory=list)


class SandboxLogLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: str = Field(max_length=64)
    level: Literal[LEVELS]  # type: ignore[valid-type]
    message: str = Field(max_length=64 * 1024)
    fields: Any = None


class SandboxError(BaseModel):
    """How the handler failed: its exception's class name and message, and which of Tickwork's kinds it was (each
    raised again in the executor as that kind: tickwork.executor.isolation)."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(pattern=_NAME)
    message: str = Field(max_length=MAX_ERROR_CHARS)
    kind: ErrorKind = "failure"
    wait_seconds: float = Field(default=0.0, ge=0, le=86_400)  # RetryNotBefore's wait, EffectMayContinue's busy time

    @classmethod
    def of(cls, exc: BaseException) -> SandboxError:
        kind: ErrorKind = "failure"
        wait = 0.0
        if isinstance(exc, PermanentJobError | ValidationError | UnknownJobType):  # no retry can change these
            kind = "permanent"
        elif isinstance(exc, RetryNotBefore):
            kind, wait = "retry_not_before", exc.wait_seconds
        elif isinstance(exc, EffectMayContinue):
            kind, wait = "effect_may_continue", exc.busy_seconds
        elif isinstance(exc, RunTimeout):
            kind = "timeout"
        name = type(exc).__name__
        return cls(
            type=name if len(name) <= 100 and name.isidentifier() else "Error",
            message=secret_mask.text(str(exc))[:MAX_ERROR_CHARS] or name[:MAX_ERROR_CHARS],
            kind=kind,
            wait_seconds=min(max(float(wait), 0.0), 86_400.0),
        )


class SandboxAnswer(BaseModel):
    """The segment's end, and the effects of its ctx calls, for the executor to apply under its lease."""

    model_config = ConfigDict(extra="forbid")

    outcome: Literal["returned", "yielded", "raised"]
    value: Any = None
    error: SandboxError | None = None
    checkpoint: dict[str, Any] | None = None  # the document the segment saved last (None: it saved none)
    progress: dict[str, Any] | None = None  # the last report (tickwork.jobtypes.durable.progress_report)
    log_lines: Annotated[list[SandboxLogLine], Field(max_length=LIMIT_LINES)] = Field(default_factory=list)
    log_dropped: int = Field(default=0, ge=0)


class JobSandbox:
    """The sandbox function's side: run one segment (a SandboxRequest) of a function-isolated handler."""

    def __init__(self, job_types: JobTypeRegistry, targets: TargetRules, clients: Any, clock: Clock) -> None:
        self.job_types, self.targets, self.clients, self.clock = job_types, targets, clients, clock

    def run(self, event: Any) -> dict[str, Any]:
        """The answer to one invocation, as JSON holds it. A request that is not one raises: Lambda's function
        error, which the executor records as the attempt's failure."""
        request = SandboxRequest.model_validate(event)
        secret_mask.hide(request.hidden)
        try:
            return self._segment(request).model_dump(mode="json")
        finally:
            secret_mask.unhide(request.hidden)

    def _segment(self, request: SandboxRequest) -> SandboxAnswer:
        kept = InMemoryCheckpoints(request.checkpoint)
        progress = KeptProgress()
        started = self.clock.now()
        ctx = RunContext(
            run_id=request.run_id,
            job_id=request.job_id,
            tenant=request.tenant,
            attempt=request.attempt,
            deadline=started + timedelta(seconds=request.seconds),
            clock=self.clock,
            http_allowlist=self.targets.http_allowlist,
            clients=self.clients,
            checkpoints=RunCheckpoints(kept),
            progress_sink=progress,
            yield_at=None if request.yield_after is None else started + timedelta(seconds=request.yield_after),
        )
        logger.info("sandboxed segment started", extra={"run_id": request.run_id, "type": request.type})
        try:
            value = self._call(request, ctx)
        except Exception as exc:
            answer = SandboxAnswer(outcome="raised", error=SandboxError.of(exc))
        else:
            answer = (
                SandboxAnswer(outcome="yielded")
                if isinstance(value, Yielded)
                else SandboxAnswer(outcome="returned", value=value)
            )
        lines, dropped = ctx.logger.collected()
        return answer.model_copy(
            update={
                "checkpoint": kept.document if kept.saves else None,
                "progress": progress.last,
                "log_lines": [SandboxLogLine.model_validate(line) for line in lines],
                "log_dropped": dropped,
            }
        )

    def _call(self, request: SandboxRequest, ctx: RunContext) -> Any:
        job_type = self.job_types.get(request.type)
        if job_type.isolation is not Isolation.FUNCTION:
            raise PermanentJobError(f"job type {job_type.name!r} runs inline, in the executor, not in the sandbox")
        payload = job_type.parse(request.payload, context=self.targets.context(request.tenant))
        value = job_type.handler(payload, ctx)
        if not isinstance(value, Yielded):
            _check_result(value)
        return value


class UnserializableResult(PermanentJobError):
    """The handler's result is not JSON, or too large to answer with: as inline, the run fails without retries."""


def _check_result(value: Any) -> None:
    try:
        size = len(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise UnserializableResult(f"the handler's result is not JSON-serialisable: {exc}") from None
    # Lambda answers a synchronous invoke with at most 6 MB; the checkpoint may take most of it.
    if size > MAX_CHECKPOINT_BYTES:
        raise UnserializableResult(
            f"the handler's result is {size} bytes as JSON, over a sandboxed result's {MAX_CHECKPOINT_BYTES}"
        )
