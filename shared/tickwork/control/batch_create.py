"""Creating up to MAX_BATCH_JOBS jobs in one request (POST /v1/bulk/jobs/create), each answered on its own.

Each job is created by the same calls as POST /v1/jobs: checked by the same JobSpec, counted against the tenant's
max_active_jobs, written with its audit record in one transaction (attributed like a single create), dispatched if
due soon. So a job costs the same write units as its single create: the job's PutItem and its audit record's, in
a transaction. Neither DynamoDB batch makes it cheaper: BatchWriteItem takes no condition (a create must not
overwrite an existing id) and cannot carry the audit record in the same write; one TransactWriteItems of every job
bills each item twice, as the single create's does, and one refused job would cancel every other. What a batch
saves is the requests around the writes: one API Gateway request and one Lambda invocation for up to 25 jobs.

A bad job does not stop the others: it is answered with the problem a single create would get (its fields named
`jobs[<index>].<field>`), and the rest are created. With the request's Idempotency-Key K, job i is created under
the key `K#i` with its own body's digest (`#` is in no request's key: no single create's key is a batch's job's),
so a retried batch answers each job as its first try did (a job whose body changed is a conflict, alone) and
creates only those the first try did not. A batch whose answer could exceed what Lambda answers with
(`MAX_ANSWER_BYTES`) is refused whole, before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tickwork.control.api_bodies import JobSpec
from tickwork.control.idempotent_create import IdempotentCreate, request_hash
from tickwork.control.job_lifecycle import JobLifecycle
from tickwork.model.audit import Attribution
from tickwork.model.errors import Conflict, FieldError, InvalidInput, QuotaExceeded, TickworkError, TooLarge
from tickwork.model.job import Job
from tickwork.observability import logger

MAX_BATCH_JOBS = 25
# What the answer may take: Lambda answers a synchronous invoke (API Gateway's) with at most 6 MB, the body as a JSON
# string in it; the rest is the answer's envelope. A job is answered whole, payload included, as stored, which may
# be larger than as sent (`1e5` is answered `100000.0`): an answer over it would be a 502 for jobs created.
MAX_ANSWER_BYTES = 6 * 1024 * 1024 - 64 * 1024
# A job's answer beyond its spec: its own fields (id, state, times, ...) and its item's, measured at about 1 KB.
JOB_ANSWER_FIELDS_BYTES = 2048
# The request's Idempotency-Key, as a single create's (tickwork.store.IDEMPOTENCY_KEY) but with room for `#<index>`.
BATCH_IDEMPOTENCY_KEY = r"^[A-Za-z0-9_.:=+/-]{1,125}$"


class BatchCreateRequest(BaseModel):
    """POST /v1/bulk/jobs/create: the jobs, each as POST /v1/jobs takes it."""

    model_config = ConfigDict(extra="forbid")

    # Each job is checked on its own (a bad one is answered, not the whole request refused), so the document says
    # only "an object" here: what the request accepts, whatever its jobs' fields (each answered on its own).
    jobs: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=MAX_BATCH_JOBS)] = Field(
        description=f"1 to {MAX_BATCH_JOBS} jobs, each an object as POST /v1/jobs takes it (JobSpec), checked on its"
        " own: a bad one is answered in its item, and the others are created. Answered in this order."
    )


class BatchOutcome(StrEnum):
    CREATED = "created"
    REPLAYED = "replayed"  # created by an earlier request under the same Idempotency-Key: its first answer
    INVALID = "invalid"  # a field is wrong (`errors` names it); nothing written
    CONFLICT = "conflict"  # its idempotency key was used with another body
    QUOTA_EXCEEDED = "quota_exceeded"  # the tenant's max_active_jobs is reached; nothing written
    REFUSED = "refused"  # any other reason (`detail`)


_OUTCOME_OF: dict[type[TickworkError], BatchOutcome] = {
    InvalidInput: BatchOutcome.INVALID,
    Conflict: BatchOutcome.CONFLICT,
    QuotaExceeded: BatchOutcome.QUOTA_EXCEEDED,
}


class BatchFieldError(BaseModel):
    field: str = Field(description="As the request names it: `jobs[<index>].<field>`.")
    message: str


class BatchCreated(BaseModel):
    index: int = Field(description="The job's place in the request's `jobs`.")
    outcome: BatchOutcome
    job: Job | None = Field(default=None, description="The job (created or replayed); null otherwise.")
    detail: str | None = Field(default=None, description="Why it was not created.")
    errors: list[BatchFieldError] = Field(default_factory=list, description="The fields at fault, when any.")


class BatchCreateResult(BaseModel):
    items: list[BatchCreated] = Field(description="One per job sent, in the request's order.")
    created: int = Field(description="How many were created by this request (replays not counted).")


@dataclass(frozen=True)
class BatchCreate:
    lifecycle: JobLifecycle
    idempotent: IdempotentCreate

    def create(
        self, tenant: str, request: BatchCreateRequest, *, key: str | None = None, by: Attribution | None = None
    ) -> BatchCreateResult:
        """Each job of `request` created for `tenant` as a single create would be, under `key#<index>` if `key`.
        TooLarge (naming `jobs`, nothing written) if the answer could exceed what Lambda can answer."""
        _check_answer_fits(request.jobs)
        items = [self._one(tenant, index, raw, key, by) for index, raw in enumerate(request.jobs)]
        created = sum(1 for item in items if item.outcome is BatchOutcome.CREATED)
        logger.info("jobs created in a batch", extra={"tenant": tenant, "jobs": len(items), "jobs_created": created})
        return BatchCreateResult(items=items, created=created)

    def _one(self, tenant: str, index: int, raw: Any, key: str | None, by: Attribution | None) -> BatchCreated:
        prefix = f"jobs[{index}]"
        try:
            spec = JobSpec.model_validate(raw)
            if key is None:
                job = self.lifecycle.create_job(tenant, spec, by=by)
                return BatchCreated(index=index, outcome=BatchOutcome.CREATED, job=job)
            body, replayed = self.idempotent.create_job_once(
                tenant, spec, key=_job_key(key, index), request_hash=request_hash(raw), by=by
            )
        except ValidationError as exc:
            return _refused(index, InvalidInput.from_validation(exc, prefix=prefix), prefix)
        except TickworkError as exc:
            return _refused(index, exc, prefix)
        outcome = BatchOutcome.REPLAYED if replayed else BatchOutcome.CREATED
        return BatchCreated(index=index, outcome=outcome, job=Job.model_validate(body))


def _check_answer_fits(jobs: list[dict[str, Any]]) -> None:
    """The answer's size at most: each job's spec as stored, plus its own fields (an invalid job's answer is its
    errors, within that allowance)."""
    size = sum(_stored_spec_bytes(raw) + JOB_ANSWER_FIELDS_BYTES for raw in jobs)
    if size > MAX_ANSWER_BYTES:
        message = f"the jobs' answer would take up to {size} bytes, over the {MAX_ANSWER_BYTES} it may: send fewer jobs"
        raise TooLarge("jobs", message)


def _stored_spec_bytes(raw: dict[str, Any]) -> int:
    """A valid job's spec as stored, as a JSON string (as Lambda's answer carries the body); 0 for an invalid one."""
    try:
        spec = JobSpec.model_validate(raw)
    except ValidationError:
        return 0
    return len(json.dumps(spec.model_dump_json()))


def _job_key(key: str, index: int) -> str:
    """The idempotency key of a batch's job `index`: `#` is never in a request's key (it separates the record's key),
    so a single create's key (say `K:0`) is never a batch's job's, nor one batch's job another's."""
    return f"{key}#{index}"


def _refused(index: int, exc: TickworkError, prefix: str) -> BatchCreated:
    """A job not created: the outcome its error's kind says, its fields named as the request names them."""
    outcome = next((_OUTCOME_OF[cls] for cls in type(exc).__mro__ if cls in _OUTCOME_OF), BatchOutcome.REFUSED)
    errors = [_in_request(e, prefix) for e in exc.errors]
    return BatchCreated(index=index, outcome=outcome, detail=str(exc), errors=errors)


def _in_request(error: FieldError, prefix: str) -> BatchFieldError:
    field = error.field if error.field.startswith(prefix) else f"{prefix}.{error.field}"
    return BatchFieldError(field=field, message=error.message)
