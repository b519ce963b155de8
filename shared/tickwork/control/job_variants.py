"""A job's variants as the API sees them (docs/versions.md): their stats over a window, from the job's run
records by one bounded Query (tickwork.store.variants.VariantRuns), and a variant promoted (made the baseline) or
rolled back by hand, each a change of the job under its version, audited (tickwork.control.job_lifecycle)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from tickwork.control.api_bodies import GuardSettings, JobVariantsView
from tickwork.control.job_lifecycle import JobLifecycle
from tickwork.control.queries import JobQueries
from tickwork.model.audit import Attribution
from tickwork.model.clock import Clock
from tickwork.model.errors import InvalidInput
from tickwork.model.job import Job
from tickwork.model.job_variants import promoted, rolled_back
from tickwork.model.variants import DEFAULT_GUARD, variant_stats
from tickwork.store.variants import VariantRuns

DEFAULT_WINDOW = "24h"
MAX_WINDOW = timedelta(days=30)
_WINDOW = re.compile(r"^(\d{1,5})([mhd])$")
_UNIT = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}


def window_of(text: str) -> timedelta:
    """`30m`, `24h`, `7d`: up to 30 days; InvalidInput (at `window`) otherwise."""
    match = _WINDOW.match(text)
    window = int(match.group(1)) * _UNIT[match.group(2)] if match else timedelta(0)
    if not timedelta(0) < window <= MAX_WINDOW:
        raise InvalidInput.one("window", f"{text!r} is not a window such as 30m, 24h or 7d, of up to 30 days")
    return window


@dataclass(frozen=True)
class JobVariants:
    lifecycle: JobLifecycle
    queries: JobQueries
    runs: VariantRuns
    clock: Clock

    def stats(self, tenant: str, job_id: str, window: str = DEFAULT_WINDOW) -> JobVariantsView:
        span = window_of(window)
        job = self.queries.get_job(tenant, job_id)
        until = self.clock.now()
        since = until - span
        read = self.runs.ended_in(job.id, since, until)
        return JobVariantsView(
            job_id=job.id,
            since=since,
            until=until,
            runs_read=len(read.runs),
            truncated=read.truncated,
            variants=variant_stats(read.runs, job.variants),
            guard=GuardSettings(
                margin=DEFAULT_GUARD.margin, min_runs=DEFAULT_GUARD.min_runs, alpha=DEFAULT_GUARD.alpha
            ),
            last_rollback=job.variant_rollback,
        )

    def promote(self, tenant: str, job_id: str, name: str, *, by: Attribution | None = None) -> Job:
        """Variant `name` becomes the job's own (its type and payload the job's; NotFound if it has none such).
        The variants that stay now vary the new baseline: checked against it as a PATCH's are (InvalidInput,
        nothing written, when one no longer passes its type's model)."""

        def change(job: Job, _: datetime) -> Job:
            after = promoted(job, name)
            self.lifecycle.factory.check_variants(tenant, after.type, after.payload, after.variants)
            return after

        return self.lifecycle.change(tenant, job_id, change, verb="variant_promote", by=by)

    def rollback(self, tenant: str, job_id: str, name: str, *, by: Attribution | None = None) -> Job:
        """Variant `name` removed (its share back to the baseline), and who did it recorded on the job."""
        who = by.actor.display if by is not None else "api"

        def change(job: Job, now: datetime) -> Job:
            return rolled_back(job, name, by=who, reason=f"rolled back by hand ({who})", now=now)

        return self.lifecycle.change(tenant, job_id, change, verb="variant_rollback", by=by)
