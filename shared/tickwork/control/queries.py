"""What a tenant reads: one job, one run, a run's result, and the listings. Nothing here writes.

Another tenant's job or run does not exist as far as a caller can tell: it is NotFound, as an unknown id is. An
admin (`admin=True`) reads any tenant's by id: ids are unique across tenants, and each item is read by its id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tickwork.control.result_reads import ResultReads
from tickwork.model.clock import Clock
from tickwork.model.errors import NotFound
from tickwork.model.ids import is_job_id, parse_run_id
from tickwork.model.job import Job
from tickwork.model.run import Run
from tickwork.model.upcoming import Scheduled, as_shown
from tickwork.store import JobRecords, RunRecords
from tickwork.store.listings import DEFAULT_LIMIT, Listings, Page


@dataclass(frozen=True)
class JobQueries:
    jobs: JobRecords
    runs: RunRecords
    listings: Listings
    results: ResultReads
    clock: Clock

    def shown(self, item: Scheduled) -> Scheduled:
        """A job or workflow as an answer shows it (tickwork.model.upcoming): its next occurrence, claimed or not.
        Only for answers: what is read to be changed and written back keeps the tick's cursor."""
        return as_shown(item, self.clock.now())

    def show_job(self, tenant: str, job_id: str, *, admin: bool = False) -> Job:
        return self.shown(self.get_job(tenant, job_id, admin=admin))

    def get_job(self, tenant: str, job_id: str, *, admin: bool = False) -> Job:
        job = self.jobs.get_job(job_id) if is_job_id(job_id) else None
        if job is None or (job.tenant != tenant and not admin):
            raise NotFound(f"job {job_id} not found")  # other tenants' jobs do not exist, as far as you know
        return job

    def get_run(self, tenant: str, run_id: str, *, admin: bool = False) -> Run:
        run = self.runs.get_run(run_id) if parse_run_id(run_id) else None
        if run is None or (run.tenant != tenant and not admin):
            raise NotFound(f"run {run_id} not found")
        return run

    def get_result(self, tenant: str, run_id: str, *, admin: bool = False) -> Any:
        """The run's result document, as stored in S3 (for echo, the payload itself): in a multi-region stack, from
        the region whose executor recorded it when this region's bucket has none (ResultRegionUnreachable if that
        region does not answer)."""
        run = self.get_run(tenant, run_id, admin=admin)
        document = self.results.read(run)
        if document is None:
            raise NotFound(f"run {run_id} has no result yet (status {run.status.value})")
        return document

    def list_jobs(self, tenant: str, **filters: Any) -> Page[Job]:
        """The tenant's jobs, newest first, as shown; `filters` are Listings.list_jobs's (limit, cursor, state, ...)."""
        page = self.listings.list_jobs(tenant, **filters)
        return Page([self.shown(job) for job in page.items], page.next_cursor)

    def list_runs(self, tenant: str, job_id: str, *, admin: bool = False, **filters: Any) -> Page[Run]:
        """A job's runs, newest first; `filters` are Listings.list_runs's (limit, cursor, status)."""
        job = self.get_job(tenant, job_id, admin=admin)  # 404 unless it is the caller's job (or the caller an admin)
        return self.listings.list_runs(job.tenant, job_id, **filters)

    def list_dlq(self, tenant: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> Page[Run]:
        """The tenant's FAILED runs, newest failure first."""
        return self.listings.list_failed_runs(tenant, limit=limit, cursor=cursor)
