"""Tenants' settings as the API sees them (an admin's PUT and GET, a tenant's own view), and the active jobs
quota every create passes (docs/fairness.md).

`max_active_jobs` is kept with a counter, `active_jobs` on the tenant's usage item (tickwork.store.tenants),
maintained only for tenants that have the quota: a create reserves a place (a conditional ADD, refused at the
limit) before its job is written, and gives it back if the job is not written; a job leaves the count when its
completion or cancel wins (tickwork.store.jobs). Setting the quota counts the tenant's active jobs that are not
counted yet, each with its mark in one transaction.

The races this accepts, each of which only ever makes the counter too high (a create refused early) except
the first two, which an admin repairs by PUTting the settings again (the recount is idempotent):
- a create that read the tenant's settings (cached up to `CACHE_SECONDS`) before the quota was set writes an
  uncounted job; so does one the recount's index query did not see yet (the index is eventually consistent);
- while the recount runs, the counter is below the true count, so creates may pass the limit by as many jobs
  as are still uncounted;
- a process that dies between the reservation and the job's write, or between a job's leaving and the
  decrement, leaves the counter one too high (logged where it can be);
- removing the quota stops counting new jobs; counted jobs still leave the count, so setting it again stays
  exact for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from tickwork.control.api_bodies import TenantUsage, TenantView
from tickwork.control.audit import AuditTrail
from tickwork.model.audit import Attribution, AuditResource
from tickwork.model.clock import Clock, stored_instant
from tickwork.model.errors import InvalidInput, QuotaExceeded
from tickwork.model.tenant_settings import TenantDirectory, TenantSettings
from tickwork.observability import logger, metrics
from tickwork.store import TENANT, KnownTenants, TenantRecords
from tickwork.store.tenants import ACTIVE_JOBS

MAX_ACTIVE_JOBS = "max_active_jobs"
# A refused create is told to retry when an active one-shot is due within this long (it then completes);
# further out, or with none, waiting is no answer (delete, cancel or raise the quota) and no Retry-After is sent.
RETRY_AFTER_HORIZON_SECONDS = 3600
# What a one-shot takes, after it is due, to complete and leave the count (dispatch, a short run, its outcome).
SETTLE_SECONDS = 5


OWN = "me"  # GET /v1/tenants/me is the caller's own view, so `me` names no tenant there


def check_tenant_name(tenant: str) -> None:
    if not TENANT.match(tenant):
        raise InvalidInput.one("tenant", f"must match {TENANT.pattern}")


@dataclass(frozen=True)
class ActiveJobsQuota:
    """The `max_active_jobs` check of a create: `admitted(tenant, written)` reserves a place for the new job (or
    refuses with QuotaExceeded) and yields whether the job is counted; if the block fails, the place is given
    back unless `written()` says the job was written all the same (a write that timed out after it happened),
    since that job is counted and will leave the count itself."""

    records: TenantRecords
    directory: TenantDirectory
    known: KnownTenants  # every create passes here: its tenant is known before its item is written
    clock: Clock

    @contextmanager
    def admitted(self, tenant: str, written: Callable[[], bool]) -> Iterator[bool]:
        counted = self.reserve(tenant)
        try:
            self.known.know(tenant)  # after the quota's refusal, which writes nothing
            yield counted
        except BaseException:
            if counted:
                self.give_back_unless(tenant, written)
            raise

    def give_back_unless(self, tenant: str, written: Callable[[], bool]) -> None:
        """Give the place back unless the job was written; when that cannot be told, keep it (over-count)."""
        try:
            if written():
                return
        except Exception:
            logger.exception(
                "could not tell whether the job was written; its place stays taken", extra={"tenant": tenant}
            )
            return
        self.give_back(tenant)

    def reserve(self, tenant: str) -> bool:
        """A place for one more active job: True (counted), False (the tenant has no quota: nothing done, no
        AWS call past the cached settings), or QuotaExceeded."""
        limit = self.directory.settings_of(tenant).max_active_jobs
        if limit is None:
            return False
        reserved, current = self.records.reserve_active_job(tenant, limit)
        if not reserved:
            self._refuse(tenant, limit, current)
        return True

    def give_back(self, tenant: str) -> None:
        """A reservation whose job was not written. A failure here leaves the counter one too high (logged)."""
        try:
            self.records.release_active_job(tenant)
        except Exception:
            logger.exception("active jobs reservation not given back; it over-counts by one", extra={"tenant": tenant})

    def _refuse(self, tenant: str, limit: int, current: int) -> None:
        retry_after = self._retry_after(tenant)
        logger.info(
            "create refused by quota",
            extra={
                "tenant": tenant,
                "quota": MAX_ACTIVE_JOBS,
                "limit": limit,
                "current": current,
                "retry_after": retry_after,
            },
        )
        with single_metric(name="QuotaRefusals", unit=MetricUnit.Count, value=1, namespace=metrics.namespace) as metric:
            metric.add_dimension(name="Quota", value=MAX_ACTIVE_JOBS)
        raise QuotaExceeded(MAX_ACTIVE_JOBS, limit, current, retry_after)

    def _retry_after(self, tenant: str) -> int | None:
        """Seconds until the soonest active one-shot should have completed, if within the horizon."""
        try:
            due = self.records.next_one_shot(tenant)
        except Exception:  # the hint is a courtesy: the refusal stands without it
            logger.exception("could not look for one-shots due soon", extra={"tenant": tenant})
            return None
        if due is None:
            return None
        wait = (stored_instant(due) - self.clock.now()).total_seconds() + SETTLE_SECONDS
        if wait > RETRY_AFTER_HORIZON_SECONDS:
            return None
        return max(1, math.ceil(wait))


@dataclass(frozen=True)
class TenantService:
    """What the tenants' routes call: an admin's PUT and GET of any tenant, and a tenant's own view."""

    records: TenantRecords
    directory: TenantDirectory
    clock: Clock
    audit: AuditTrail  # each PUT's record, in the PUT's own write

    def view(self, tenant: str) -> TenantView:
        """The tenant's settings (the defaults if none are stored) and usage, in one BatchGetItem."""
        check_tenant_name(tenant)
        stored, usage = self.records.get_settings_and_usage(tenant)
        settings = stored or TenantSettings()
        # The counter is kept only while the quota is set (none yet: zero); otherwise what it holds may be stale,
        # so it is not shown.
        active = int(usage.get(ACTIVE_JOBS, 0)) if settings.max_active_jobs is not None else None
        return TenantView(tenant=tenant, settings=settings, usage=TenantUsage(active_jobs=active))

    def put(self, tenant: str, settings: TenantSettings, *, by: Attribution | None = None) -> TenantSettings:
        """Replace the tenant's settings; with a `max_active_jobs`, count its active jobs not counted yet. Its audit
        record (attributed to `by`, an admin) is the set tenant's: the tenant sees who changed its quotas."""
        check_tenant_name(tenant)
        if tenant == OWN:  # /v1/tenants/me reads the caller's own; setting it would set a tenant named `me`
            raise InvalidInput.one("tenant", "`me` names your own tenant only to read it; name the tenant to set")
        resource = AuditResource(kind="tenant", id=tenant)

        def audit_of(before: TenantSettings | None) -> dict[str, Any] | None:
            return self.audit.item(
                by, tenant=tenant, action="tenant.settings", resource=resource, before=before, after=settings
            )

        previous = self.records.put_settings(tenant, settings, self.clock.now(), audit_of=audit_of if by else None)
        self.directory.forget(tenant)
        recounted = self.recount(tenant) if settings.max_active_jobs is not None else 0
        logger.info(
            "tenant settings set",
            extra={
                "tenant": tenant,
                "settings": settings.model_dump(exclude_none=True),
                "previous": previous.model_dump(exclude_none=True) if previous else None,
                "newly_counted": recounted,
            },
        )
        return settings

    def recount(self, tenant: str) -> int:
        """Count the tenant's ACTIVE and PAUSED jobs and workflows not counted yet (a paged Query, then one
        transaction each: its mark and the counter). Idempotent: a counted job is never counted again, so a
        recount that died half-way is finished by the next PUT. Returns how many it counted."""
        return sum(1 for job_id in list(self.records.uncounted_active(tenant)) if self.records.count_in(tenant, job_id))
