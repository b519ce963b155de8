"""`lambda`: invokes a function synchronously with the payload; a function error is a failure."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from tickwork.aws.clients import ANSWER_LOST
from tickwork.jobtypes.registry import EffectMayContinue, RunContext, job_type
from tickwork.model.targets import TargetRules

_FUNCTION = re.compile(r"^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:)?[A-Za-z0-9_-]{1,64}(:[\w$-]+)?$")


def _arn_pattern(pattern: str) -> re.Pattern[str]:
    """An IAM resource pattern as IAM reads it: `*` any run of characters, `?` any one, the rest literal."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


def invocation_refusal(function: str, targets: TargetRules) -> str | None:
    """Why the stack may not invoke `function` (a name, or an ARN, either with a qualifier), or None when its
    InvokableFunctionArns hold it. A name is this stack's account and region's, as Lambda reads it."""
    if not targets.invokable_functions:
        return None
    arn = function if function.startswith("arn:") else targets.function_arn_prefix + function
    if any(_arn_pattern(p).fullmatch(arn) for p in targets.invokable_functions):
        return None
    allowed = ", ".join(targets.invokable_functions)
    return (
        f"{arn} is not among the functions this stack may invoke (its InvokableFunctionArns: {allowed}); "
        "whether the function exists is known only when a run invokes it"
    )


class LambdaPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    function_arn: str = Field(min_length=1, max_length=170, json_schema_extra={"pattern": _FUNCTION.pattern})
    payload: Any = Field(default_factory=dict)

    @field_validator("function_arn")
    @classmethod
    def _valid_function(cls, value: str, info: ValidationInfo) -> str:
        if not _FUNCTION.match(value):
            raise ValueError("function_arn must be a Lambda function name or ARN")
        reason = invocation_refusal(value, TargetRules.of(info.context))
        if reason:
            raise ValueError(reason)
        return value


class FunctionError(RuntimeError):
    pass


# A Lambda function runs for at most 15 minutes, whether or not its caller is still waiting.
TARGET_MAX_SECONDS = 900


@job_type("lambda", LambdaPayload)
def invoke_function(payload: LambdaPayload, ctx: RunContext) -> Any:
    """Invokes `function_arn` with `payload` (RequestResponse); returns the function's response.

    One attempt is one Invoke: the client never retries by itself, and waits only for the time the run has
    left. If the answer is lost after the request went out (a read timeout, a dropped connection), the target
    may still be running, so the next attempt is held back until it has certainly ended."""
    client = ctx.clients.single_attempt_client("lambda", read_timeout=max(1.0, ctx.remaining_seconds()))
    try:
        response = client.invoke(
            FunctionName=payload.function_arn,
            InvocationType="RequestResponse",
            Payload=json.dumps({"payload": payload.payload, "run_id": ctx.run_id, "job_id": ctx.job_id}).encode(),
        )
    except ANSWER_LOST as exc:
        raise EffectMayContinue(
            f"{payload.function_arn}: no answer ({type(exc).__name__}); the function may still be running",
            busy_seconds=TARGET_MAX_SECONDS,
        ) from exc
    raw = response["Payload"].read()
    body: Any = json.loads(raw) if raw else None
    if response.get("FunctionError"):
        raise FunctionError(f"{payload.function_arn} failed ({response['FunctionError']}): {str(body)[:500]}")
    return body
