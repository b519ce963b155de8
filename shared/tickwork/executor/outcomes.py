"""Recording a run's outcome: succeeded, retrying (with backoff), failed (the API's DLQ) or skipped; or, before it
ran, deferred by a limit (the attempt given back).

Every outcome is one conditional write on the run (`lease_owner = :me AND status = RUNNING`): an executor
whose lease was taken over records nothing. A terminal outcome then settles what the run belongs to: its job
completes after its last occurrence, or its workflow run records the step's end and moves on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from tickwork.aws.queues import RunQueues, SendReport
from tickwork.aws.results import INLINE, ResultStore
from tickwork.executor import run_metrics
from tickwork.executor.breaker import CircuitBreakers
from tickwork.executor.delivery import Delivery, Outcome
from tickwork.executor.limits import Deferral
from tickwork.executor.run_warnings import SlowRuns
from tickwork.executor.variant_guard import VariantGuard
from tickwork.faults import CrashPoint, FaultPlan
from tickwork.model.backoff import Random, backoff_seconds
from tickwork.model.clock import Clock
from tickwork.model.deadlines import slack_seconds
from tickwork.model.forecast_uses import DEFAULT_SLOW_FACTOR
from tickwork.model.run import MAX_ATTEMPT_ERROR_CHARS, AttemptHistory, AttemptRecord, Run, RunError, RunResult
from tickwork.model.run_event_kinds import FAILURE_KINDS, RunEventKind, emitted
from tickwork.model.run_target import RunTarget
from tickwork.model.states import AttemptOutcome, DeferReason, RunStatus, RunTrigger, SkipReason
from tickwork.model.stuck import held_back_stuck
from tickwork.observability import logger, metrics
from tickwork.progress.job_completion import JobCompletion
from tickwork.progress.run_events import OUTBOX_GRACE, RunEvents
from tickwork.store import BreakerRecords, Finished, JobRecords, RunLeases, RunRecords

# Runs of a job's own occurrences: the one of its last occurrence completes it. A manual trigger's is not one.
OCCURRENCE_TRIGGERS = (RunTrigger.SCHEDULE, RunTrigger.BACKFILL)
MAX_MESSAGE_BACKOFF_SECONDS = 900  # longer backoffs park the run in the due index (a fresh message, on time)


class StepSettlement(Protocol):
    """Where a workflow step's end goes (tickwork.progress.workflow_progress.WorkflowProgress)."""

    def step_settled(self, run: Run, status: RunStatus, skip_reason: SkipReason | None = None) -> SendReport: ...


# One piece over 250 lines: every outcome is the same conditional write by the lease's holder (`_finish`), and a
# terminal one the same consequences after it (`_end`); split by outcome, each part would reach back for both.
class RunOutcomes:
    def __init__(
        self,
        jobs: JobRecords,
        runs: RunRecords,
        leases: RunLeases,
        breakers: BreakerRecords,
        queues: RunQueues,
        clock: Clock,
        *,
        retry_safety_net: timedelta,
        rng: Random | None,
        faults: FaultPlan,
        steps: StepSettlement | None = None,
        results: ResultStore | None = None,
        events: RunEvents | None = None,
        guard: VariantGuard | None = None,
        slow_factor: float = DEFAULT_SLOW_FACTOR,
    ) -> None:
        self.leases, self.queues, self.clock = leases, queues, clock
        self.guard = guard  # a job's variants' (tickwork.executor.variant_guard); None: not wired
        self.slow = SlowRuns(events, slow_factor)
        self.results = results
        self.steps = steps
        # How long after a message-borne retry's time the tick re-sends it, were its message never to come back.
        self.retry_safety_net = retry_safety_net
        self.rng = rng
        self.faults = faults
        self.events = events
        self.breakers = CircuitBreakers(breakers, events)
        self.completion = JobCompletion(jobs, runs)

    def _finish(
        self,
        run: Run,
        *,
        owner: str,
        status: RunStatus,
        now: datetime,
        attempt: tuple[datetime | None, AttemptOutcome],
        notify: Sequence[str] | None = None,
        **fields: Any,
    ) -> Finished:
        """The outcome's conditional write: not `recorded` if this executor no longer holds the lease. `attempt`
        is when the attempt began (None: no record, its handler never started) and how it ended, for its
        history. A run found slow is marked by it, and published after it (if its job's `notify` asks)."""
        self.faults.reached(CrashPoint.EXECUTOR_BEFORE_FINISH)
        started, outcome = attempt
        record = attempt_record(run, started, now, outcome, fields.get("error"))
        slow_at = self.slow.found(run, fields.get("duration_ms"), now)
        finished = self.leases.finish_run(
            run, owner=owner, status=status, now=now, history=history_after(run, record), slow_at=slow_at, **fields
        )
        if finished.recorded and slow_at is not None:
            self.slow.warn(run, fields["duration_ms"], slow_at, notify)
        return finished

    def settled(
        self,
        run: Run,
        target: RunTarget | None,
        now: datetime,
        status: RunStatus,
        skip_reason: SkipReason | None = None,
        *,
        finished: Finished,
    ) -> None:
        """A run reached a terminal state. A workflow step's: its workflow run records it and starts what that
        allows. A job's scheduled or backfilled run of its last occurrence, or a run asked to carry the job's
        completion on (`finished.completes_job`): the job completes if every run of its occurrences has settled
        (tickwork.progress.job_completion; the store completes it only while nothing else is pending: a PATCH may have
        added an occurrence, or the tick has not yet advanced the job past a backfilled occurrence, and then its claim
        completes it)."""
        if run.workflow_run_id is not None:
            if self.steps is not None:
                self.steps.step_settled(run, status, skip_reason)
            return
        last = target is not None and target.last_occurrence and run.trigger in OCCURRENCE_TRIGGERS
        if last or finished.completes_job:
            alone = last and target is not None and target.only_occurrence
            self.completion.attempt(run.job_id, now, alone=alone)

    def _end(
        self,
        run: Run,
        target: RunTarget | None,
        owner: str,
        status: RunStatus,
        *,
        attempt: tuple[datetime | None, AttemptOutcome],
        skip_reason: SkipReason | None = None,
        then: Callable[[datetime], None] | None = None,
        **fields: Any,
    ) -> Finished:
        """A terminal outcome, by one path: its conditional write; then, if it was recorded, `then` (given the
        outcome's time), what the run belongs to settled, and its job's breaker told."""
        now = self.clock.now()
        if skip_reason is not None:
            fields["skip_reason"] = skip_reason
        if target is not None:
            fields["variant"] = target.variant
        notify = target.notify if target is not None else None
        finished = self._finish(run, owner=owner, status=status, now=now, attempt=attempt, notify=notify, **fields)
        if finished.recorded and run.deadline_at is not None:
            # How long before its deadline the run ended (negative: after it; the tick records that miss).
            metrics.add_metric(name="SlackSeconds", unit="Seconds", value=slack_seconds(run.deadline_at, now))
        if finished.recorded:
            if then is not None:
                then(now)
            self.settled(run, target, now, status, skip_reason, finished=finished)
            self.breakers.run_settled(run, target.job if target is not None else None, status, now)
            if self.guard is not None:
                self.guard.run_settled(run, target, status)
        return finished

    def succeed(
        self,
        run: Run,
        target: RunTarget,
        owner: str,
        result: RunResult,
        *,
        duration_ms: int | None,
        started: datetime | None = None,
    ) -> Outcome:
        attempt = (started, AttemptOutcome.SUCCEEDED)
        ended = self._end(
            run, target, owner, RunStatus.SUCCEEDED, attempt=attempt, result=result, duration_ms=duration_ms
        )
        if not ended.recorded:
            logger.warning("lease lost before recording success; the result object stands")
            if result.location == INLINE and self.results is not None:
                self.results.keep_for_takeover(run, result)
            return Outcome.DONE
        _count("RunsSucceeded", run.tenant)
        logger.info(
            "run succeeded",
            extra={
                "attempt": run.attempts,
                "duration_ms": duration_ms,
                "result_bytes": result.bytes,
                "lateness_ms": run.lateness_ms,
            },
        )
        return Outcome.DONE

    def retry(
        self,
        run: Run,
        target: RunTarget,
        owner: str,
        error: RunError,
        delivery: Delivery,
        *,
        duration_ms: int,
        at_least: float,
        started: datetime | None = None,
    ) -> Outcome:
        """The next attempt after a backoff (at least `at_least` seconds): on the message, or parked."""
        delay = max(backoff_seconds(target.retry, run.attempts, self.rng), math.ceil(at_least))
        now = self.clock.now()
        not_before = now + timedelta(seconds=delay)
        on_message = delay <= MAX_MESSAGE_BACKOFF_SECONDS
        if not self._finish(
            run,
            owner=owner,
            status=RunStatus.RETRYING,
            now=now,
            error=error,
            duration_ms=duration_ms,
            not_before=not_before,
            # On the message: a safety net, were it never to come back. Parked: the retry itself.
            resend_at=not_before + self.retry_safety_net if on_message else not_before,
            attempt=(started, AttemptOutcome.RETRYING),
            variant=target.variant,
            notify=target.notify,
        ).recorded:
            return Outcome.DONE
        _count("RunsRetried", run.tenant)
        logger.warning(
            "run failed; retrying",
            extra={
                "attempt": run.attempts,
                "max_attempts": target.retry.max_attempts,
                "retry_in_s": delay,
                "retry_via": "message" if on_message else "due index",
                "error_type": error.type,
                "error": error.message,
            },
        )
        if not on_message:
            return Outcome.DONE  # the message goes; the tick sends a fresh one at not_before
        self.queues.change_visibility(delivery.queue_url, delivery.receipt_handle, delay)
        return Outcome.RETRY_LATER

    def defer(
        self,
        run: Run,
        owner: str,
        previous: RunStatus | None,
        deferral: Deferral,
        delivery: Delivery,
        *,
        started: datetime | None = None,
    ) -> Outcome:
        """A limit held the run back (tickwork.executor.limits): the lease goes back in one write, the attempt not
        consumed, and the run comes back after the wait: on its message, or from the due index if the wait is
        longer than a message may be held back. Its scheduled time is untouched, so its lateness keeps counting."""
        now = self.clock.now()
        not_before = now + timedelta(seconds=deferral.wait_seconds)
        on_message = deferral.wait_seconds <= MAX_MESSAGE_BACKOFF_SECONDS
        # Back to what it was before this lease; a run taken over from a dead executor had an attempt already.
        status = previous if previous in (RunStatus.QUEUED, RunStatus.RETRYING) else RunStatus.RETRYING
        if not self.leases.defer_run(
            run,
            owner=owner,
            status=status,
            reason=deferral.reason,
            not_before=not_before,
            resend_at=not_before + self.retry_safety_net if on_message else not_before,
            history=history_after(run, attempt_record(run, started, now, AttemptOutcome.DEFERRED)),
        ):
            return Outcome.DONE  # the lease was taken over: its new holder decides
        _count_deferral(deferral.reason)
        run_metrics.count_for_tenant("RunsDeferred", run.tenant)
        if held_back_stuck(status, run.scheduled_for, deferral.reason, now):
            _count_held_back(run, deferral)
        logger.info(
            "run deferred by a limit; attempt not consumed",
            extra={
                "run_id": run.id,
                "reason": deferral.reason.value,
                "retry_in_s": deferral.wait_seconds,
                "deferred": run.deferred + 1,
            },
        )
        if not on_message:
            return Outcome.DONE  # the tick sends it at not_before
        self.queues.change_visibility(delivery.queue_url, delivery.receipt_handle, deferral.wait_seconds)
        return Outcome.BUSY

    def fail(
        self,
        run: Run,
        target: RunTarget,
        owner: str,
        error: RunError,
        *,
        duration_ms: int | None = None,
        started: datetime | None = None,
    ) -> Outcome:
        """No attempts left: FAILED, which puts the run in its tenant's DLQ (the table's, GET /v1/dlq), and its
        message is acknowledged. The band's SQS dead-letter queue is not for it: that one holds the messages the
        executor could not process (docs/architecture.md, "Dead letters")."""
        failed_at: list[datetime] = []
        attempt = (started, AttemptOutcome.FAILED)
        status = RunStatus.FAILED
        # Its run events ride on the outcome's write (the outbox), and are published after it and its consequences.
        kinds = FAILURE_KINDS
        if target.job is not None and target.job.circuit_breaker is not None:
            kinds = (*kinds, RunEventKind.JOB_SUSPENDED)
        pending = emitted(target.notify, kinds) if self.events is not None else []
        outbox_at = self.clock.now() + OUTBOX_GRACE
        if not self._end(
            run,
            target,
            owner,
            status,
            attempt=attempt,
            then=failed_at.append,
            error=error,
            duration_ms=duration_ms,
            events_pending=pending,
            outbox_at=outbox_at if pending else None,
        ).recorded:
            return Outcome.DONE
        if pending and self.events is not None:
            self.faults.reached(CrashPoint.EVENTS_BEFORE_PUBLISH)
            self.events.run_failed(run, error, failed_at[0], pending, outbox_at)
        _count("RunsFailed", run.tenant)
        logger.error(
            "run failed; no attempts left",
            extra={"attempt": run.attempts, "error_type": error.type, "error": error.message},
        )
        return Outcome.DONE

    def skip(
        self,
        run: Run,
        target: RunTarget | None,
        owner: str,
        reason: SkipReason,
        *,
        started: datetime | None = None,
    ) -> Outcome:
        """Recorded SKIPPED. `started` only for a handler that ran and was cancelled: its attempt is in the
        history; a run skipped before its handler started has no attempt record (its skip_reason says why), and
        one whose execution never started before (its first attempt, no segment yielded) no start either: only the
        skip's time."""
        self._end(
            run,
            target,
            owner,
            RunStatus.SKIPPED,
            attempt=(started, AttemptOutcome.CANCELLED),
            skip_reason=reason,
            never_started=started is None and run.first_start_of_execution,
        )
        _count("RunsSkipped", run.tenant)
        logger.info("run skipped", extra={"skip_reason": reason.value})
        return Outcome.DONE


def _count(name: str, tenant: str) -> None:
    """A run outcome's count, in the function's metrics and under its tenant."""
    metrics.add_metric(name=name, unit="Count", value=1)
    run_metrics.count_for_tenant(name, tenant)


def attempt_record(
    run: Run, started: datetime | None, now: datetime, outcome: AttemptOutcome, error: RunError | None = None
) -> AttemptRecord | None:
    """The record of the attempt the lease began at `started` (None: no attempt to record). A handler that
    outlived its timeout (RunTimeout) is `timed_out`, whether it is then retried or failed."""
    if started is None:
        return None
    if error is not None and error.type == "RunTimeout":
        outcome = AttemptOutcome.TIMED_OUT
    return AttemptRecord(
        attempt=run.attempts,
        started_at=started,
        ended_at=now,
        outcome=outcome,
        error=None if error is None else f"{error.type}: {error.message}"[:MAX_ATTEMPT_ERROR_CHARS],
    )


LOST_ATTEMPT = "its executor stopped before recording an outcome (it crashed or ran out of time); the next took over"


def history_after(run: Run, record: AttemptRecord | None) -> AttemptHistory:
    """The run's attempt history as this attempt's outcome leaves it, written whole by that outcome's update (the
    lease holder is the history's only writer, and `run` holds it as the lease read it, without the record the
    lease opened for this attempt): earlier records still open are attempts whose executor died, marked so;
    then this attempt's `record` (None: none, as for a run skipped before its handler started); a deferral that
    follows a deferral of the same attempt extends that record rather than adding one (a run deferred many times
    would push its real attempts out); and the last MAX_ATTEMPT_HISTORY records one by one, the earlier ones
    folded into the run's summary of them (AttemptHistory.bounded)."""
    history = [
        old if old.outcome is not None or old.ended_at is not None else old.model_copy(update={"error": LOST_ATTEMPT})
        for old in run.attempt_history
    ]
    last = history[-1] if history else None
    deferred_again = (
        record is not None
        and last is not None
        and record.outcome is AttemptOutcome.DEFERRED
        and last.outcome is AttemptOutcome.DEFERRED
        and last.attempt == record.attempt
    )
    if record is not None and last is not None and deferred_again:
        history[-1] = last.model_copy(update={"ended_at": record.ended_at})
    elif record is not None:
        history.append(record)
    return AttemptHistory(history, run.earlier_attempts).bounded()


def _count_deferral(reason: DeferReason) -> None:
    """RunsDeferred with its Reason as a dimension, emitted at once: the batch's shared metric set carries no
    per-metric dimensions. single_metric ignores POWERTOOLS_METRICS_DISABLED, so this honours it."""
    if is_metrics_disabled():
        return
    with single_metric(name="RunsDeferred", unit=MetricUnit.Count, value=1, namespace=metrics.namespace) as metric:
        metric.add_dimension(name="Reason", value=reason.value)


def _count_held_back(run: Run, deferral: Deferral) -> None:
    """StuckRunsHeldBack: a stuck run a gate deferred once more, counted here because its deferral moved its due
    entry past the tick's reads (StuckRuns never sees it); `StuckRunsAlarm` watches both."""
    metrics.add_metric(name="StuckRunsHeldBack", unit=MetricUnit.Count, value=1)
    logger.warning(
        "stuck run held back: queued long past its time, deferred again",
        extra={"run_id": run.id, "reason": deferral.reason.value, "scheduled_for": run.scheduled_for.isoformat()},
    )
