"""Job sandbox: runs one segment of a function-isolated job type's handler for the executor, which invokes it
synchronously and keeps the run's lease, retries and outcome (tickwork.jobtypes.sandbox). Its role reaches none of
Tickwork's table, queues or bucket."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from tickwork.observability import observed
from tickwork.services import SandboxServices, WiringSlot

_slot = WiringSlot(SandboxServices.from_env)
services = _slot.get  # the wiring, built on first use: of the job code's settings only (its environment's)
use_services = _slot.set  # tests and the local runtime inject theirs


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return services().job_sandbox.run(event)
