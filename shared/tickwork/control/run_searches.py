"""GET /v1/runs: a tenant's runs across its jobs and workflows, filtered, newest first (tickwork.store.run_search).

A job's own attributes (its type, its tags) are not on its runs: a search by them first finds the tenant's jobs
that have them (the jobs listing, one Query of tenant-index), then searches those jobs' runs. At most
MAX_SEARCH_JOBS jobs may match, found within MAX_JOB_PAGES pages of the listing; past either the search is refused
naming the filter, so its cost stays bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tickwork.model.errors import InvalidInput
from tickwork.model.run import Run
from tickwork.model.states import RunStatus, RunTrigger
from tickwork.store.listings import MAX_LIMIT, Listings, Page
from tickwork.store.run_search import MAX_SEARCH_JOBS, RunSearch, RunSearchIndex

MAX_JOB_PAGES = 5
# A tag filter: a key of 1 to 128 characters without `=`, then `=`, then the value (maybe empty), as Tags allows.
MAX_TAG_KEY, MAX_TAG_VALUE = 128, 256
TAG_FILTER_PATTERN = rf"^[^=]{{1,{MAX_TAG_KEY}}}=[\s\S]{{0,{MAX_TAG_VALUE}}}$"
TAG_FILTER_MAX_LENGTH = MAX_TAG_KEY + 1 + MAX_TAG_VALUE


@dataclass(frozen=True)
class RunSearchFilters:
    """What GET /v1/runs takes. `on`: which instant `since`/`until` bound, `scheduled_for` or `ended_at`."""

    status: RunStatus | None = None
    job_id: str | None = None
    workflow_id: str | None = None
    job_type: str | None = None
    tag: tuple[str, str] | None = None
    trigger: RunTrigger | None = None
    error_type: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    on: str = "scheduled_for"


@dataclass(frozen=True)
class RunSearches:
    listings: Listings
    index: RunSearchIndex

    def search(self, tenant: str, filters: RunSearchFilters, *, limit: int, cursor: str | None) -> Page[Run]:
        """Filters combine (AND): ones that no run can meet together (a job and a workflow, an empty window) find
        nothing, as any search that matches nothing does."""
        job_ids = self._job_ids(tenant, filters)
        empty_window = filters.since is not None and filters.until is not None and filters.since > filters.until
        if job_ids == () or empty_window:
            return Page([], None)
        by_end = filters.on == "ended_at"
        search = RunSearch(
            statuses=(filters.status,) if filters.status is not None else (),
            job_ids=job_ids,
            workflow_runs_only=filters.workflow_id is not None,
            trigger=filters.trigger,
            error_type=filters.error_type,
            scheduled_from=None if by_end else filters.since,
            scheduled_to=None if by_end else filters.until,
            ended_from=filters.since if by_end else None,
            ended_to=filters.until if by_end else None,
        )
        return self.index.search(tenant, search, limit=limit, cursor=cursor)

    def _job_ids(self, tenant: str, filters: RunSearchFilters) -> tuple[str, ...] | None:
        """The jobs (or the workflow) whose runs the search reads: None for all; () for none. A step's run carries
        its workflow's id as its job id, so a job and a workflow named together, or a workflow with a job's type
        or tag, match nothing."""
        named = {filters.job_id, filters.workflow_id} - {None}
        if len(named) > 1:
            return ()
        if filters.job_type is None and filters.tag is None:
            return tuple(str(job_id) for job_id in named) or None
        if filters.workflow_id is not None:
            return ()
        field = "tag" if filters.tag is not None else "type"
        matching: list[str] = []
        cursor: str | None = None
        for _ in range(MAX_JOB_PAGES):
            page = self.listings.list_jobs(
                tenant, limit=MAX_LIMIT, cursor=cursor, job_type=filters.job_type, tag=filters.tag
            )
            matching += [job.id for job in page.items if filters.job_id in (None, job.id)]
            if len(matching) > MAX_SEARCH_JOBS:
                raise InvalidInput.one(
                    field, f"matches more than {MAX_SEARCH_JOBS} jobs: add job_id, or search by status and time"
                )
            cursor = page.next_cursor
            if cursor is None:
                return tuple(matching)
        raise InvalidInput.one(field, "too many jobs to look through for it: add job_id, or search by status and time")
