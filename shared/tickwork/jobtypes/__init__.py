"""Job types: a registry that users extend with a decorator, in modules named by JOB_TYPE_MODULES (template
parameter JobTypeModules; see docs/job-types.md).

from pydantic import BaseModel
from tickwork.jobtypes import job_type, RunContext

class ResizePayload(BaseModel):
    bucket: str
    key: str

@job_type("resize", ResizePayload)
def resize(payload: ResizePayload, ctx: RunContext) -> dict:
    ...  # return a JSON-serialisable result; raise to fail (and retry)
"""

from __future__ import annotations

# Importing registers the built-in types.
from tickwork.jobtypes import echo, http, lambda_invoke  # noqa: F401
from tickwork.jobtypes.durable import CheckpointNotJSON, CheckpointTooLarge
from tickwork.jobtypes.registry import (
    EffectMayContinue,
    Isolation,
    JobType,
    JobTypeModuleError,
    LeaseLost,
    PermanentJobError,
    RetryNotBefore,
    RunContext,
    RunTimeout,
    UnknownJobType,
    import_job_type_modules,
    job_type,
    registry,
)

__all__ = [
    "CheckpointNotJSON",
    "CheckpointTooLarge",
    "EffectMayContinue",
    "Isolation",
    "JobType",
    "JobTypeModuleError",
    "LeaseLost",
    "PermanentJobError",
    "RetryNotBefore",
    "RunContext",
    "RunTimeout",
    "UnknownJobType",
    "import_job_type_modules",
    "job_type",
    "registry",
]
