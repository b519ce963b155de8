"""The messages between the tick and the executor: a run's message (with its copy of the job), and a dispatch
worker's slice of a fanned-out tick."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from tickwork.model.deadlines import Deadline
from tickwork.model.ids import parse_run_id
from tickwork.model.policies import DEFAULT_MAX_RUN_SECONDS, ConcurrencyLimit, RateLimit, RetryPolicy, StoredTags
from tickwork.model.run_event_kinds import Notify
from tickwork.model.schedule import UtcDatetime
from tickwork.model.variants import Variants

if TYPE_CHECKING:
    from tickwork.model.job import Job


class RunSettings(BaseModel):
    """What a run takes from its job, whether from the job as read or from its message's copy (`JobRunSpec`):
    `run_settings` copies these fields, so the claim's copy and the executor's RunTarget list none of them."""

    model_config = ConfigDict(extra="forbid")

    type: str
    payload: dict[str, Any]
    retry: RetryPolicy
    timeout_seconds: int
    max_run_seconds: int = DEFAULT_MAX_RUN_SECONDS
    concurrency: ConcurrencyLimit | None = None
    rate_limit: RateLimit | None = None
    notify: Notify | None = None  # the job's (absent: the default)
    deadline: Deadline | None = None
    # Its job's tags: an executor matches a freeze's selector with them (tickwork.executor.freeze_gate).
    tags: StoredTags = Field(default_factory=dict)
    # Its job's variants: the executor applies the one its run recorded (tickwork.model.variants.applied).
    variants: Variants = Field(default_factory=list)


def run_settings(source: Job | RunSettings) -> dict[str, Any]:
    """`source`'s RunSettings fields, as they are on it (a job's, or a copy's)."""
    return {name: getattr(source, name) for name in RunSettings.model_fields}


class JobRunSpec(RunSettings):
    """What the executor needs of a job to run its scheduled run, copied into the run's message by the claim from
    the job as the claim's own write left it (tickwork.model.run_spec), so that the executor need not read the job.
    Only an ACTIVE job's, with overlap ALLOW, no circuit breaker and a small payload; the job's later changes
    mark its claimed runs (Run.job_changed_at), whose executors then read the job as it is."""

    # The job has no occurrence after this run's: its settling may complete the job.
    last_occurrence: bool = False
    # ...and this run is the only run of an occurrence the job has had: its settling completes the job with no
    # look at the job's other runs (tickwork.progress.job_completion).
    only_occurrence: bool = False


class RunMessage(BaseModel):
    """The SQS body from tick to executor: small, because the run record holds the rest; a claimed run's may
    carry a copy of its job's spec (`job`), which saves the executor a read."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    run_id: str = Field(min_length=28, max_length=128)
    job_id: str
    tenant: str
    scheduled_for: UtcDatetime
    # A precise run: the executor waits until scheduled_for before it leases (absent, and not sent, otherwise).
    precise: Literal[True] | None = None
    job: JobRunSpec | None = None

    @model_validator(mode="after")
    def _ids_agree(self) -> RunMessage:
        parsed = parse_run_id(self.run_id)
        if parsed is None or parsed[0] != self.job_id:
            raise ValueError("run_id does not belong to job_id")
        return self


class DispatchSlice(BaseModel):
    """A dispatch worker's share of one tick: the shards `s` with `s % workers == worker`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: int = Field(default=1, ge=1, le=1)
    tick_at: AwareDatetime = Field(description="The coordinator's tick instant; a slice older than a tick is stale.")
    worker: int = Field(ge=0, le=999)
    workers: int = Field(ge=1, le=1000)

    @model_validator(mode="after")
    def _worker_in_range(self) -> DispatchSlice:
        if self.worker >= self.workers:
            raise ValueError(f"worker must be below workers ({self.workers}), got {self.worker}")
        return self

    def shards(self, total: int) -> list[int]:
        return list(range(self.worker, total, self.workers))

    def stale(self, now: datetime, tick_period: timedelta) -> bool:
        """A slice the next tick has replaced: it arrived (or came back) a tick period or more after its tick."""
        return now - self.tick_at >= tick_period
