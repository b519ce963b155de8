"""The circuit breaker (docs/policies.md, "Circuit breaker"): a job whose scheduled runs keep failing is
SUSPENDED instead of burning its executor time, and probed again after a cooldown.

Closed: each FAILED scheduled run adds one to the job's `consecutive_failures` (one conditional write), and a
SUCCEEDED one resets it (a write only if the count, as the executor read the job, was not zero). At
`failure_threshold` the breaker opens: SUSPENDED, with `breaker.opens_until`. Open: the claim records every
occurrence SKIPPED `circuit_open`, and queues the first occurrence from `opens_until` as the probe (half-open,
`breaker.probe_at`). The probe's outcome closes the breaker (ACTIVE) or opens it again for twice the cooldown,
up to `max_cooldown_seconds`. A job without a breaker pays nothing here: no read, no write.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tickwork.executor.admission import ADMIT, Admit, Answer, Entry, Skip
from tickwork.model.job import Job
from tickwork.model.policies import BreakerState
from tickwork.model.run import Run
from tickwork.model.run_target import RunTarget
from tickwork.model.states import JobState, RunStatus, RunTrigger, SkipReason
from tickwork.observability import logger, metrics
from tickwork.progress.run_events import RunEvents
from tickwork.store import BreakerRecords


def opened_reason(failures: int) -> str:
    return f"{failures} consecutive failed runs"


class CircuitBreakers:
    """What a run's terminal outcome does to its job's breaker (called by tickwork.executor.outcomes.RunOutcomes)."""

    def __init__(self, records: BreakerRecords, events: RunEvents | None = None) -> None:
        self.records = records
        self.events = events  # `Job Suspended`, published after the write that opens the breaker

    def run_settled(self, run: Run, job: Job | None, status: RunStatus, now: datetime) -> None:
        """A scheduled run of `job` (as the executor read it) ended with `status`."""
        if job is None or job.circuit_breaker is None or run.trigger is not RunTrigger.SCHEDULE:
            return
        if run.workflow_run_id is not None:
            return
        breaker = job.breaker
        if job.state is JobState.SUSPENDED and breaker is not None and breaker.probe_at == run.occurrence_at:
            self._probe_settled(job, breaker, status, now)
        elif status is RunStatus.SUCCEEDED:
            if job.consecutive_failures > 0:
                self.records.reset_failures(job.id)
        elif status is RunStatus.FAILED and job.state is JobState.ACTIVE:
            self._failed(job, run, now)

    def elect_queued_probe(self, job: Job, run: Run, now: datetime) -> Job | None:
        """A scheduled run claimed before the breaker opened, due at or after the cooldown's end, while no probe
        is named: make it the probe (one conditional write; only a SUSPENDED job's runs pay it). The job as it
        now stands, or None: the run stays held back (a probe is named already, or the breaker changed)."""
        breaker = job.breaker
        if (
            job.state is not JobState.SUSPENDED
            or breaker is None
            or breaker.probe_at is not None
            or run.trigger is not RunTrigger.SCHEDULE
            or run.workflow_run_id is not None
            or run.occurrence_at < breaker.opens_until
        ):
            return None
        if not self.records.elect_probe(job.id, probe_at=run.occurrence_at, breaker=breaker, now=now):
            return None
        logger.info("half-open: a run claimed before the breaker opened is its probe", probe_at=str(run.occurrence_at))
        return job.model_copy(
            update={"breaker": breaker.model_copy(update={"probe_at": run.occurrence_at}), "version": job.version + 1}
        )

    def _failed(self, job: Job, run: Run, now: datetime) -> None:
        assert job.circuit_breaker is not None
        policy = job.circuit_breaker
        # The run's end: its FAILED end once per re-queue (a retry by hand ends again as a failure of its own).
        failures = self.records.count_failure(job.id, f"{run.id}#{run.requeues}")
        if failures < policy.failure_threshold:
            return
        breaker = BreakerState(
            opens_until=now + timedelta(seconds=policy.cooldown_seconds),
            cooldown_seconds=policy.cooldown_seconds,
            consecutive_failures=failures,
        )
        if not self.records.open_breaker(
            job.id, threshold=policy.failure_threshold, breaker=breaker, reason=opened_reason(failures), now=now
        ):
            return  # opened already by a racing failure, reset by a success, or no longer ACTIVE
        metrics.add_metric(name="CircuitOpened", unit="Count", value=1)
        if self.events is not None:
            self.events.job_suspended(job, now, opened_reason(failures), breaker.opens_until)
        logger.warning(
            "circuit breaker opened: job suspended",
            extra={"job_id": job.id, "consecutive_failures": failures, "opens_until": breaker.opens_until},
        )

    def _probe_settled(self, job: Job, breaker: BreakerState, status: RunStatus, now: datetime) -> None:
        assert job.circuit_breaker is not None
        assert breaker.probe_at is not None
        metrics.add_metric(name="CircuitProbe", unit="Count", value=1)
        if status is RunStatus.SUCCEEDED:
            if self.records.close_breaker(job.id, probe_at=breaker.probe_at, now=now):
                metrics.add_metric(name="CircuitClosed", unit="Count", value=1)
                logger.info("circuit breaker closed: the probe run succeeded", extra={"job_id": job.id})
            return
        # A failed probe doubles the cooldown (up to the cap); one that never ran (skipped) keeps it.
        cooldown = breaker.cooldown_seconds
        failures = breaker.consecutive_failures
        if status is RunStatus.FAILED:
            cooldown = min(cooldown * 2, job.circuit_breaker.max_cooldown_seconds)
            failures += 1
        reopened = BreakerState(
            opens_until=now + timedelta(seconds=cooldown), cooldown_seconds=cooldown, consecutive_failures=failures
        )
        if self.records.reopen_breaker(job.id, probe_at=breaker.probe_at, breaker=reopened, now=now):
            logger.warning(
                "circuit breaker probe did not succeed: job stays suspended",
                extra={"job_id": job.id, "probe": status.value, "cooldown_s": cooldown},
            )


class HeldBackGate:
    """The gate of a run its job or workflow run holds back (paused, cancelled: RunTarget.held_back), skipped;
    while its job's breaker is open, a run claimed before it opened may be elected its probe, and runs."""

    def __init__(self, breakers: CircuitBreakers) -> None:
        self.breakers = breakers

    def admit(self, entry: Entry) -> Answer:
        target = entry.target
        if target.held_back is SkipReason.CIRCUIT_OPEN and target.job is not None:
            probing = self.breakers.elect_queued_probe(target.job, entry.run, entry.now)
            if probing is not None:  # the cooldown is over: this run is the breaker's probe
                return Admit(target=RunTarget.of_job(probing, entry.run))
        if target.held_back is not None:
            return Skip(target.held_back)
        return ADMIT


def closed(job: Job) -> Job:
    """A manual resume of a SUSPENDED job: ACTIVE, the breaker closed and its count reset."""
    return job.model_copy(
        update={
            "state": JobState.ACTIVE,
            "breaker": None,
            "consecutive_failures": 0,
            "suspended_at": None,
            "suspended_reason": None,
        }
    )
