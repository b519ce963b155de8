"""A job type for the secrets acceptance tests (issue 35) that puts the secret it is given everywhere a handler can:
its log, the function's log, progress, a step, a checkpoint, its error, its result. The in-process test registers
it by importing this module; the browser's `tickwork dev` by `--job-types tests.secret_leaker`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.secret_references import SecretOrStr, revealed
from tickwork.observability import logger


class Leaky(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: SecretOrStr
    mode: Literal["succeed", "fail", "yield"]


if "secret-leaker" not in registry:

    @job_type("secret-leaker", Leaky)
    def leak(payload: Leaky, ctx: RunContext) -> Any:
        """Puts its token everywhere a handler can, then succeeds, fails or yields once as its mode says."""
        token = revealed(payload.token)
        ctx.log(f"using {token}", token=token)
        logger.info(f"handler sees {token}", extra={"token": token, "nested": {"list": [token]}})
        ctx.progress(0.5, f"half way with {token}", {"token": token})
        ctx.step("fetch", lambda: {"token": token})
        first_segment = ctx.last_checkpoint() is None
        ctx.checkpoint({"token": token})
        if payload.mode == "fail":
            raise RuntimeError(f"the server refused {token}")
        if payload.mode == "yield" and first_segment:
            return ctx.yield_run()
        return {"token": token, "also": [f"Bearer {token}"]}
