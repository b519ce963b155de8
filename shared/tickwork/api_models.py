"""The HTTP API's response shapes (requests are tickwork.jobs.JobSpec, JobUpdate and RedriveRequest).

Jobs and runs are the core models themselves (tickwork.models.Job and Run), serialised with times as
ISO-8601 UTC with milliseconds; these models only wrap them for listings, and describe problem details.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tickwork.models import Job, Run

PROBLEM_JSON = "application/problem+json"


class JobList(BaseModel):
    items: list[Job]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class RunList(BaseModel):
    items: list[Run]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class RedriveResult(BaseModel):
    redriven: int = Field(description="How many FAILED runs were re-queued.")
    run_ids: list[str] = Field(description="The runs re-queued.")
    not_redriven: list[str] = Field(
        description="Named runs that were not re-queued: unknown, not the caller's, or not FAILED."
    )
    more: bool = Field(description="A redrive of all runs stopped at its per-call cap; call again for the rest.")


class Health(BaseModel):
    status: str = "ok"
    version: str


class ProblemField(BaseModel):
    field: str = Field(description="The offending field, as a path: `schedule.cron`, `priority`, `run_ids[0]`.")
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details (`application/problem+json`)."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="A URI naming the problem kind; `about:blank` when the status says it all.")
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[ProblemField] = Field(default_factory=list)
