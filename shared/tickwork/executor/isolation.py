"""A function-isolated handler's segment, the executor's side: invoke the job sandbox (JobSandboxFunction) and apply
what its ctx did, under this executor's lease (tickwork.jobtypes.sandbox says what crosses, and when).

The call is the handler's call for everything around it (tickwork.executor.run_executor): it runs in the handler's
thread under the heartbeat, within the segment's budget, and ends as the handler ended, raising the kind of error
the handler raised (PermanentJobError, RetryNotBefore, EffectMayContinue, RunTimeout, or a plain failure, each under
the handler's own class name), so retries, yields and the outcome are decided exactly as for an inline handler. The
effects come first: the lines logged, the last progress report, the checkpoint (fenced by the lease as any save:
an attempt that lost its lease saves nothing and stops with LeaseLost), then the outcome.

One Invoke per segment, sent once (no SDK retry: a second invoke would run the handler twice in one attempt). An
answer that never came (a read timeout, a dropped connection) means the sandbox may still be running: the attempt
fails with EffectMayContinue, so the next one waits until the sandbox has certainly ended. A sandbox that crashed
(Lambda's function error: out of memory, its own timeout, a malformed request) fails the attempt, retried as any
failure; so does an answer that is not a SandboxAnswer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from tickwork.aws.clients import ANSWER_LOST
from tickwork.jobtypes import (
    EffectMayContinue,
    JobType,
    PermanentJobError,
    RetryNotBefore,
    RunContext,
    RunTimeout,
)
from tickwork.jobtypes.durable import Yielded, progress_report
from tickwork.jobtypes.sandbox import SandboxAnswer, SandboxError, SandboxRequest
from tickwork.observability import logger

# How long past the segment's deadline the sandbox's answer is waited for: it stops at its deadline, then answers.
ANSWER_GRACE_SECONDS = 10.0


class SandboxFailed(RuntimeError):
    """The sandbox did not answer as a SandboxAnswer (it crashed, timed out, or answered something else)."""


class NoSandbox(PermanentJobError):
    """A function-isolated job type, and no sandbox function to run it in (JOB_SANDBOX_FUNCTION unset)."""


class JobSandboxCalls:
    """Runs function-isolated handlers' segments in `function_name` (JobSandboxFunction), through `clients`."""

    def __init__(self, clients: Any, function_name: str | None, *, busy_seconds: float) -> None:
        self.clients = clients
        self.function_name = function_name
        self.busy_seconds = busy_seconds  # the sandbox function's own timeout: how long a lost call may go on

    def call(self, job_type: JobType, payload: dict[str, Any], hidden: Sequence[str], ctx: RunContext) -> Any:
        """The handler's segment run in the sandbox on `payload` (the run's secrets in place; `hidden`: their
        values), from ctx's checkpoint; its effects applied to ctx; its value returned (a Yielded for a yield), or
        its error raised."""
        if not self.function_name:
            raise NoSandbox(
                f"job type {job_type.name!r} runs in the job sandbox function (isolation 'function'), and this "
                "executor has none (JOB_SANDBOX_FUNCTION)"
            )
        now = ctx.clock.now()
        request = SandboxRequest(
            type=job_type.name,
            payload=payload,
            run_id=ctx.run_id,
            job_id=ctx.job_id,
            tenant=ctx.tenant,
            attempt=ctx.attempt,
            seconds=min(max(ctx.remaining_seconds(), 0.0), 900.0),
            yield_after=None if ctx.yield_at is None else min(max((ctx.yield_at - now).total_seconds(), 0.0), 900.0),
            checkpoint=ctx.checkpoints.document(),
            hidden=list(hidden),
        )
        client = self.clients.single_attempt_client(
            "lambda", read_timeout=max(ctx.remaining_seconds(), 0.0) + ANSWER_GRACE_SECONDS
        )
        try:
            response = client.invoke(
                FunctionName=self.function_name,
                InvocationType="RequestResponse",
                Payload=request.model_dump_json().encode(),
            )
        except ANSWER_LOST as exc:
            raise EffectMayContinue(
                f"the job sandbox did not answer ({type(exc).__name__}); its segment may still be running",
                busy_seconds=self.busy_seconds,
            ) from exc
        raw = response["Payload"].read()
        if response.get("FunctionError"):
            raise SandboxFailed(f"the job sandbox failed ({response['FunctionError']}): {_error_text(raw)}")
        try:
            answer = SandboxAnswer.model_validate_json(raw)
        except ValidationError as exc:
            fields = sorted({".".join(map(str, err["loc"])) or "answer" for err in exc.errors()})[:10]
            raise SandboxFailed(f"the job sandbox's answer is not one (at {', '.join(fields)})") from None
        return apply(answer, ctx)


NO_SANDBOX = JobSandboxCalls(None, None, busy_seconds=0)


def apply(answer: SandboxAnswer, ctx: RunContext) -> Any:
    """The segment's effects applied to ctx (the executor's: its run log, progress reports and leased checkpoints),
    then its end: the value, a Yielded, or the error raised again."""
    ctx.logger.extend([line.model_dump() for line in answer.log_lines], answer.log_dropped)
    if answer.progress is not None:
        report = answer.progress
        try:
            ctx.progress_sink.report(progress_report(report.get("fraction"), report.get("message"), report.get("data")))
        except ValueError as exc:  # as inline, a bad report is the handler's error; here it is only dropped
            logger.warning("a sandboxed progress report refused", extra={"run_id": ctx.run_id, "reason": str(exc)})
    if answer.checkpoint is not None:
        ctx.checkpoints.replace(answer.checkpoint)
    if answer.outcome == "yielded":
        return Yielded()
    if answer.outcome == "raised":
        raise raised(answer.error or SandboxError(type="SandboxFailed", message="the sandbox gave no error"))
    return answer.value


def raised(error: SandboxError) -> Exception:
    """The handler's error as this process raises it: of its kind, under its own class name (what the run's error
    records), with its message."""
    if error.kind == "permanent":
        return type(error.type, (PermanentJobError,), {})(error.message)
    if error.kind == "retry_not_before":
        return type(error.type, (RetryNotBefore,), {})(error.message, wait_seconds=error.wait_seconds)
    if error.kind == "effect_may_continue":
        return type(error.type, (EffectMayContinue,), {})(error.message, busy_seconds=error.wait_seconds)
    if error.kind == "timeout":
        return type(error.type, (RunTimeout,), {})(error.message)
    return type(error.type, (RuntimeError,), {})(error.message)


def _error_text(raw: bytes) -> str:
    """Lambda's function error body, {"errorType", "errorMessage", ...}, as one short line."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw[:500].decode(errors="replace")
    if not isinstance(body, dict):
        return str(body)[:500]
    return f"{body.get('errorType', 'Error')}: {str(body.get('errorMessage', ''))[:500]}"
