"""The job sandbox's protocol (tickwork.jobtypes.sandbox, tickwork.executor.isolation) over a stand-in Lambda client:
each way a segment ends, raised again in the executor of its kind and under its own name; what the executor does with
an answer that never came, a crashed sandbox, or an answer that is not one; effects applied under the limits of the
executor's own writers; the sandbox's refusals."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from pydantic import BaseModel, ValidationError
from tickwork.executor.isolation import JobSandboxCalls, NoSandbox, SandboxFailed, apply, raised
from tickwork.jobtypes import (
    EffectMayContinue,
    JobType,
    PermanentJobError,
    RetryNotBefore,
    RunContext,
    RunTimeout,
)
from tickwork.jobtypes.durable import CheckpointTooLarge, Yielded
from tickwork.jobtypes.registry import JobTypeRegistry
from tickwork.jobtypes.run_log import RunLog
from tickwork.jobtypes.sandbox import JobSandbox, SandboxAnswer, SandboxError
from tickwork.model.clock import FakeClock
from tickwork.model.targets import TargetRules
from tickwork.observability import secret_mask

START = datetime(2026, 11, 29, 6, 0, tzinfo=UTC)


class Args(BaseModel):
    do: str = "return"


def _handler(payload: Args, ctx: RunContext) -> Any:
    ctx.log("working", do=payload.do)
    ctx.checkpoint({"did": payload.do})
    ctx.progress(0.25, "a quarter")
    if payload.do == "yield":
        return ctx.yield_run()
    if payload.do == "object":
        return object()
    if payload.do == "check":
        ctx.check()
    if payload.do == "raise":
        raise KeyError("missing thing")
    return {"did": payload.do, "should_yield": ctx.should_yield()}


def _sandbox(clock: FakeClock) -> JobSandbox:
    types = JobTypeRegistry()
    types.register(JobType("boxed", Args, _handler, isolation="function"))
    types.register(JobType("plain", Args, _handler))
    return JobSandbox(types, TargetRules(), None, clock)


def _request(**fields: Any) -> dict[str, Any]:
    base = {"type": "boxed", "payload": {}, "run_id": "j1.1", "job_id": "j1", "tenant": "acme", "attempt": 1}
    return {**base, "seconds": 60, **fields}


class Lambda:
    """A stand-in Lambda client: answers each invoke with `answer` (or raises it), and keeps the requests."""

    def __init__(self, answer: Any, function_error: str | None = None) -> None:
        self.answer, self.function_error, self.requests = answer, function_error, []

    def invoke(self, **params: Any) -> dict[str, Any]:
        self.requests.append(params)
        if isinstance(self.answer, Exception):
            raise self.answer
        body = self.answer if isinstance(self.answer, bytes) else json.dumps(self.answer).encode()
        response: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(body)}
        if self.function_error:
            response["FunctionError"] = self.function_error
        return response


class Clients:
    def __init__(self, client: Lambda) -> None:
        self.client, self.read_timeouts = client, []

    def single_attempt_client(self, service: str, *, read_timeout: float) -> Lambda:
        assert service == "lambda"
        self.read_timeouts.append(read_timeout)
        return self.client


def _ctx(clock: FakeClock) -> RunContext:
    return RunContext("j1.1", "j1", "acme", 1, clock.now() + timedelta(seconds=60), clock)


BOXED = JobType("boxed", Args, _handler, isolation="function")


# ---------------------------------------------------------------- the sandbox's side


def test_a_segment_answers_its_value_and_what_its_ctx_did():
    clock = FakeClock(START)
    answer = SandboxAnswer.model_validate(_sandbox(clock).run(_request(yield_after=30)))
    assert (answer.outcome, answer.value) == ("returned", {"did": "return", "should_yield": False})
    assert answer.checkpoint == {"state": {"did": "return"}, "steps": {}}
    assert answer.progress == {"fraction": 0.25, "message": "a quarter", "data": None}
    assert [(line.message, line.fields) for line in answer.log_lines] == [("working", {"do": "return"})]


def test_a_segment_starts_from_the_checkpoint_it_is_sent_and_yields():
    clock = FakeClock(START)
    answer = SandboxAnswer.model_validate(
        _sandbox(clock).run(_request(payload={"do": "yield"}, checkpoint={"state": 1, "steps": {"a": 2}}))
    )
    assert answer.outcome == "yielded"
    assert answer.checkpoint == {"state": {"did": "yield"}, "steps": {"a": 2}}  # the steps it was sent, kept


@pytest.mark.parametrize(
    ("exc", "kind", "wait"),
    [
        (PermanentJobError("no"), "permanent", 0),
        (RetryNotBefore("later", wait_seconds=30), "retry_not_before", 30),
        (EffectMayContinue("still going", busy_seconds=120), "effect_may_continue", 120),
        (RunTimeout("late"), "timeout", 0),
        (KeyError("x"), "failure", 0),
    ],
)
def test_each_kind_of_error_crosses_and_is_raised_again_of_its_kind_under_its_own_name(exc, kind, wait):
    error = SandboxError.of(exc)
    assert (error.type, error.kind, error.wait_seconds) == (type(exc).__name__, kind, wait)
    again = raised(error)
    assert type(again).__name__ == type(exc).__name__
    assert isinstance(again, type(exc) if kind != "failure" else RuntimeError)
    assert getattr(again, "wait_seconds", getattr(again, "busy_seconds", 0)) == wait


def test_an_error_message_is_masked_and_cut_in_the_sandbox():
    secret_mask.hide(["s3cr3t-value"])
    try:
        error = SandboxError.of(RuntimeError("token s3cr3t-value " + "x" * 5000))
    finally:
        secret_mask.unhide(["s3cr3t-value"])
    assert error.message.startswith("token *** ")
    assert len(error.message) == 2000


def test_the_sandbox_refuses_an_inline_type_and_a_result_json_cannot_hold_for_good():
    clock = FakeClock(START)
    inline = SandboxAnswer.model_validate(_sandbox(clock).run(_request(type="plain")))
    assert inline.error is not None
    assert (inline.error.kind, inline.error.type) == ("permanent", "PermanentJobError")
    assert "runs inline" in inline.error.message
    unserializable = SandboxAnswer.model_validate(_sandbox(clock).run(_request(payload={"do": "object"})))
    assert unserializable.error is not None
    assert (unserializable.error.kind, unserializable.error.type) == ("permanent", "UnserializableResult")


def test_a_type_the_sandbox_does_not_know_fails_the_run_for_good():
    answer = SandboxAnswer.model_validate(_sandbox(FakeClock(START)).run(_request(type="elsewhere")))
    assert answer.error is not None
    assert (answer.error.kind, answer.error.type) == ("permanent", "UnknownJobType")
    assert "unknown job type 'elsewhere'" in answer.error.message


def test_past_its_deadline_a_handler_that_checks_stops_with_a_timeout():
    clock = FakeClock(START)
    answer = SandboxAnswer.model_validate(_sandbox(clock).run(_request(payload={"do": "check"}, seconds=0)))
    assert answer.error is not None
    assert answer.error.kind == "timeout"
    assert answer.checkpoint == {"state": {"did": "check"}, "steps": {}}  # saved before, kept


def test_a_request_that_is_not_one_raises_lambdas_function_error():
    with pytest.raises(ValidationError):
        _sandbox(FakeClock(START)).run({"type": "boxed"})


# ---------------------------------------------------------------- the executor's side


def _answer(**fields: Any) -> dict[str, Any]:
    return SandboxAnswer.model_validate({"outcome": "returned", **fields}).model_dump(mode="json")


def test_the_executor_sends_the_runs_context_and_returns_the_value():
    clock = FakeClock(START)
    client = Lambda(_answer(value={"ok": True}))
    clients = Clients(client)
    ctx = _ctx(clock)
    ctx.yield_at = clock.now() + timedelta(seconds=45)
    value = JobSandboxCalls(clients, "stack-JobSandboxFunction", busy_seconds=900).call(BOXED, {"do": "x"}, ["v"], ctx)
    assert value == {"ok": True}
    (params,) = client.requests
    assert (params["FunctionName"], params["InvocationType"]) == ("stack-JobSandboxFunction", "RequestResponse")
    sent = json.loads(params["Payload"])
    assert (sent["seconds"], sent["yield_after"], sent["hidden"], sent["checkpoint"]) == (60, 45, ["v"], None)
    assert clients.read_timeouts == [70]  # the segment's time, and a grace for its answer


def test_an_answer_that_never_came_holds_the_next_attempt_back_for_the_sandboxs_timeout():
    client = Lambda(ReadTimeoutError(endpoint_url="https://lambda"))
    with pytest.raises(EffectMayContinue) as lost:
        JobSandboxCalls(Clients(client), "sandbox", busy_seconds=900).call(BOXED, {}, [], _ctx(FakeClock(START)))
    assert lost.value.busy_seconds == 900


def test_a_crashed_sandbox_and_an_answer_that_is_not_one_fail_the_attempt():
    crashed = Lambda({"errorType": "Runtime.OutOfMemory", "errorMessage": "killed"}, function_error="Unhandled")
    with pytest.raises(SandboxFailed, match=r"failed \(Unhandled\): Runtime.OutOfMemory: killed"):
        JobSandboxCalls(Clients(crashed), "sandbox", busy_seconds=900).call(BOXED, {}, [], _ctx(FakeClock(START)))
    garbled = Lambda(b"not json at all", function_error="Unhandled")
    with pytest.raises(SandboxFailed, match="not json at all"):
        JobSandboxCalls(Clients(garbled), "sandbox", busy_seconds=900).call(BOXED, {}, [], _ctx(FakeClock(START)))
    forged = Lambda({"outcome": "won", "extra": 1})
    with pytest.raises(SandboxFailed, match=r"not one \(at extra, outcome\)"):
        JobSandboxCalls(Clients(forged), "sandbox", busy_seconds=900).call(BOXED, {}, [], _ctx(FakeClock(START)))


def test_without_a_sandbox_function_the_run_fails_for_good_naming_the_setting():
    with pytest.raises(NoSandbox, match="JOB_SANDBOX_FUNCTION"):
        JobSandboxCalls(None, None, busy_seconds=0).call(BOXED, {}, [], _ctx(FakeClock(START)))


def test_effects_are_applied_under_the_executors_own_limits():
    clock = FakeClock(START)
    ctx = _ctx(clock)
    ctx.logger = RunLog("j1.1", 1, clock, limit_lines=1)
    line = {"at": "2026-11-29T06:00:00Z", "level": "INFO", "message": "one", "fields": {}}
    answer = SandboxAnswer.model_validate(
        {
            "outcome": "raised",
            "error": {"type": "Boom", "message": "boom", "kind": "failure"},
            "log_lines": [line, {**line, "message": "two"}],
            "log_dropped": 3,
            "progress": {"fraction": 7, "message": "too far"},  # refused by progress_report: dropped, not applied
        }
    )
    with pytest.raises(RuntimeError, match="boom") as failed:
        apply(answer, ctx)
    assert type(failed.value).__name__ == "Boom"
    lines, dropped = ctx.logger.collected()
    assert ([entry["message"] for entry in lines], dropped) == (["one"], 4)
    assert ctx.progress_sink.last is None  # type: ignore[attr-defined]
    too_large = SandboxAnswer.model_validate({"outcome": "returned", "checkpoint": {"state": "x" * (5 * 2**20)}})
    with pytest.raises(CheckpointTooLarge):
        apply(too_large, ctx)
    assert ctx.last_checkpoint() is None
    assert isinstance(apply(SandboxAnswer(outcome="yielded"), ctx), Yielded)
