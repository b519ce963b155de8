"""Pausing, resuming or cancelling many of a tenant's jobs at once (POST /v1/bulk/jobs), chosen as a freeze chooses
them (tickwork.model.freezes.FreezeSelectorSpec: `tags`, every one of them; `job_ids`; or `all`).

Each job is changed by the same call as its own route's (JobLifecycle: idempotent, attributed, audited in its own
write), and answered on its own: changed, already so, not found, or refused with the reason. A request changes at
most MAX_BULK_JOBS: `job_ids` names at most that many, and a `tags` or `all` selection is read from the tenant's
jobs listing (tenant-index, never a Scan) one page at a time, answered with the listing's cursor for the next.
Only the caller's tenant's jobs are ever read or changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from tickwork.control.job_lifecycle import JobLifecycle
from tickwork.control.queries import JobQueries
from tickwork.model.audit import Attribution
from tickwork.model.errors import Conflict, InvalidInput, NotFound
from tickwork.model.freezes import FreezeSelectorSpec
from tickwork.model.job import Job
from tickwork.model.states import JobState
from tickwork.observability import logger
from tickwork.store.listings import Listings

MAX_BULK_JOBS = 100


class BulkAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"


class BulkOutcome(StrEnum):
    OK = "ok"  # changed now
    ALREADY = "already"  # it was so already: nothing written
    NOT_FOUND = "not_found"  # unknown, or another tenant's
    REFUSED = "refused"  # its state does not allow it (resuming a CANCELLED job, ...): `reason` says


class BulkJobsRequest(BaseModel):
    """POST /v1/bulk/jobs: what to do, to which jobs."""

    model_config = ConfigDict(extra="forbid")

    action: BulkAction
    selector: FreezeSelectorSpec = Field(description="As a freeze's: `tags` (every one), `job_ids` or `all`.")
    cursor: str | None = Field(
        default=None,
        max_length=2048,
        description="A `tags` or `all` selection's next page: the previous answer's `next_cursor`.",
    )


class BulkJobResult(BaseModel):
    job_id: str
    outcome: BulkOutcome
    state: JobState | None = Field(default=None, description="The job's state after (null: not found).")
    reason: str | None = Field(default=None, description="Why it was refused.")


class BulkJobsResult(BaseModel):
    action: BulkAction
    items: list[BulkJobResult] = Field(description="One per job selected on this page, in the listing's order.")
    next_cursor: str | None = Field(
        description=f"More jobs may be selected (at most {MAX_BULK_JOBS} a request): send the request again "
        "with this as `cursor`; null when done."
    )


@dataclass(frozen=True)
class BulkJobs:
    lifecycle: JobLifecycle
    queries: JobQueries
    listings: Listings

    def apply(self, tenant: str, request: BulkJobsRequest, *, by: Attribution | None = None) -> BulkJobsResult:
        selector = request.selector
        change = self._change(request.action)
        if selector.job_ids is not None:
            if request.cursor is not None:
                raise InvalidInput.one("cursor", "only a tags or all selection is paged; job_ids are answered whole")
            items = [self._one(tenant, job_id, change, by) for job_id in dict.fromkeys(selector.job_ids)]
            return BulkJobsResult(action=request.action, items=items, next_cursor=None)
        first_tag = next(iter(selector.tags.items())) if selector.tags else None
        page = self.listings.list_jobs(tenant, limit=MAX_BULK_JOBS, cursor=request.cursor, tag=first_tag)
        # The index's copy may lag the job: each is read again (consistent), and changed if it is still selected.
        items = [
            self._one(tenant, job.id, change, by, selector) for job in page.items if selector.selects(job.id, job.tags)
        ]
        logger.info(
            "jobs changed in bulk",
            extra={
                "tenant": tenant,
                "action": request.action.value,
                "jobs": len(items),
                "more": bool(page.next_cursor),
            },
        )
        return BulkJobsResult(action=request.action, items=items, next_cursor=page.next_cursor)

    def _change(self, action: BulkAction) -> Callable[..., Job]:
        return {
            BulkAction.PAUSE: self.lifecycle.pause,
            BulkAction.RESUME: self.lifecycle.resume,
            BulkAction.CANCEL: self.lifecycle.cancel,
        }[action]

    def _one(
        self,
        tenant: str,
        job_id: str,
        change: Callable[..., Job],
        by: Attribution | None,
        selector: FreezeSelectorSpec | None = None,
    ) -> BulkJobResult:
        try:
            job = self.queries.get_job(tenant, job_id)
        except NotFound:
            return BulkJobResult(job_id=job_id, outcome=BulkOutcome.NOT_FOUND)
        if selector is not None and not selector.selects(job.id, job.tags):
            return BulkJobResult(
                job_id=job.id, outcome=BulkOutcome.REFUSED, state=job.state, reason="its tags changed meanwhile"
            )
        return self._changed(job, change, by)

    @staticmethod
    def _changed(job: Job, change: Callable[..., Job], by: Attribution | None) -> BulkJobResult:
        try:
            after = change(job.tenant, job.id, by=by)
        except Conflict as exc:
            return BulkJobResult(job_id=job.id, outcome=BulkOutcome.REFUSED, state=job.state, reason=str(exc))
        except NotFound:  # pragma: no cover - a job is never deleted, only expired long after it ended
            return BulkJobResult(job_id=job.id, outcome=BulkOutcome.NOT_FOUND)
        outcome = BulkOutcome.ALREADY if after.version == job.version else BulkOutcome.OK
        return BulkJobResult(job_id=job.id, outcome=outcome, state=after.state)
