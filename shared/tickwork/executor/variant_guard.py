"""The variants' guard (docs/versions.md): a run of a job's variant (or of its baseline, beside variants) that
ends SUCCEEDED or FAILED is counted on the job item, and the count's own write returns the job's tallies, so the
guard decides then (tickwork.model.variants.guard_verdict) with no read of its own. A variant found failing more
than the baseline by the margin is rolled back at once: the job written without it under its version, with why
(`variant_rollback`) and an audit record by `tickwork` in the same write, its claimed runs told their copies of the
job are stale (tickwork.model.run_spec), then `Variant Rolled Back` published.

Why at the outcome: it is the one moment a run's end is known, the write that counts is one small UpdateItem per
run of a job with variants (none for a job without), and the decision is O(1). The tick would have to query each
such job's runs again and again; the outcome already holds what the test needs.
"""

from __future__ import annotations

from datetime import datetime

from tickwork.model.audit import SYSTEM, Attribution, AuditResource, audit_record
from tickwork.model.clock import Clock
from tickwork.model.job import Job
from tickwork.model.job_variants import rolled_back
from tickwork.model.run import Run
from tickwork.model.run_events import variant_rolled_back_event
from tickwork.model.run_spec import MARK_BACK
from tickwork.model.run_target import RunTarget
from tickwork.model.states import RunStatus
from tickwork.model.variants import (
    BASELINE,
    DEFAULT_GUARD,
    GuardPolicy,
    Tally,
    Variant,
    guard_verdict,
    stale_tallies,
    tally_attributes,
)
from tickwork.observability import logger, metrics
from tickwork.progress.run_events import RunEvents
from tickwork.store import JobRecords, RunRecords
from tickwork.store.audit import AuditItems
from tickwork.store.variants import VariantTallies

ROLLBACK_RETRIES = 5
ENDS = (RunStatus.SUCCEEDED, RunStatus.FAILED)


class VariantGuard:
    def __init__(
        self,
        tallies: VariantTallies,
        jobs: JobRecords,
        runs: RunRecords,
        clock: Clock,
        *,
        events: RunEvents | None = None,
        policy: GuardPolicy = DEFAULT_GUARD,
    ) -> None:
        self.tallies, self.jobs, self.runs, self.clock = tallies, jobs, runs, clock
        self.events = events
        self.policy = policy

    def run_settled(self, run: Run, target: RunTarget | None, status: RunStatus) -> None:
        """Count a job's run that ended, if its job has variants, and roll its variant back if it fails."""
        if target is None or target.variant is None or run.workflow_run_id is not None or status not in ENDS:
            return
        if target.job is not None and not _declared(target.job, target.variant):
            return  # its variant went while it was in flight (it ran the baseline): no count for what is gone
        try:
            # A run re-queued after its FAILED end was counted (its variant recorded then) counts once, as it ends now.
            again = run.requeues > 0 and run.variant is not None
            counted = self.tallies.count(run.job_id, target.variant, failed=status is RunStatus.FAILED, again=again)
        except Exception:  # the outcome stands; a count lost makes the guard a little slower to tell
            logger.exception("could not count the variant's run", extra={"variant": target.variant})
            return
        if (
            counted is None
            or not counted.new_run
            or target.variant == BASELINE
            or target.variant not in counted.declared
        ):
            return
        verdict = guard_verdict(
            counted.tallies.get(target.variant, Tally()), counted.tallies.get(BASELINE, Tally()), self.policy
        )
        if verdict.roll_back:
            self.roll_back(run.job_id, target.variant, verdict.reason, judged=counted.declared[target.variant])

    def roll_back(self, job_id: str, name: str, reason: str, *, judged: Variant | None = None) -> bool:
        """The job written without variant `name`, by `tickwork`, with `reason`: False if it is gone or declares
        no such variant any more (another rollback, or a person, got there first), or one other than `judged`, the
        variant whose counts were judged (a change since put another in its place, its counts forgotten)."""
        for _ in range(ROLLBACK_RETRIES):
            job = self.jobs.get_job(job_id)
            current = next((v for v in job.variants if v.name == name), None) if job is not None else None
            if (
                job is None
                or current is None
                or (judged is not None and stale_tallies([judged], [current], baseline_changed=False))
            ):
                return False
            now = self.clock.now()
            changed = rolled_back(job, name, by=SYSTEM.display, reason=reason, now=now)
            changed = changed.model_copy(update={"version": job.version + 1, "updated_at": now})
            record = audit_record(
                Attribution(actor=SYSTEM),
                tenant=job.tenant,
                action="job.variant_rollback",
                resource=AuditResource(kind="job", id=job.id),
                at=now,
                before=job,
                after=changed,
            )
            self.runs.mark_runs_job_changed(job.id, now=now, since=now - MARK_BACK)
            if self.jobs.replace_job(
                changed, expected_version=job.version, audit=AuditItems().item(record), forget=tally_attributes([name])
            ):
                self._rolled_back(job.id, job.tenant, name, reason, now)
                return True
        logger.warning(
            "the variant's rollback lost to concurrent changes; the guard's next look at it tries again",
            extra={"job_id": job_id, "variant": name, "reason": reason},
        )
        return False

    def _rolled_back(self, job_id: str, tenant: str, name: str, reason: str, now: datetime) -> None:
        metrics.add_metric(name="VariantsRolledBack", unit="Count", value=1)
        logger.warning("variant rolled back by its guard", extra={"job_id": job_id, "variant": name, "reason": reason})
        if self.events is not None:
            self.events.publish(
                [
                    variant_rolled_back_event(
                        job_id=job_id, tenant=tenant, variant=name, reason=reason, by=SYSTEM.display, at=now
                    )
                ]
            )


def _declared(job: Job, variant: str) -> bool:
    """Whether `job`, as the executor read it, still runs `variant`: one it declares, or its baseline beside some."""
    return any(v.name == variant for v in job.variants) or (variant == BASELINE and bool(job.variants))
