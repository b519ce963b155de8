"""Run one delivered run message: lease, check the job, run its type's handler, record the outcome.

Promises kept here:
- 3, effect once: a terminal run is acknowledged without running; a result is written with
  If-None-Match: *, and a run taken over from a dead executor first looks for the result it may have left.
- 4, one place at a time: the lease is a conditional write (QUEUED/RETRYING, or RUNNING with an expired
  lease, becomes RUNNING); long runs heartbeat to extend it and the message's visibility.
- 5, retries: exponential backoff with full jitter through ChangeMessageVisibility, then FAILED, with the
  error, on the band's DLQ; paused/cancelled/overlapping runs are recorded SKIPPED with the reason.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from tickwork.backoff import Random, backoff_seconds
from tickwork.clock import Clock, to_ms
from tickwork.jobtypes import PermanentJobError, RunContext, RunTimeout, UnknownJobType
from tickwork.jobtypes.registry import JobTypeRegistry
from tickwork.models import (
    Band,
    DeadLetter,
    Job,
    JobState,
    OverlapPolicy,
    Run,
    RunError,
    RunMessage,
    RunResult,
    RunStatus,
    RunTrigger,
    SkipReason,
)
from tickwork.observability import logger, metrics
from tickwork.queues import RunQueues
from tickwork.results import ResultStore
from tickwork.store import JobStore, LeaseOutcome

SAFETY_MARGIN_SECONDS = 15  # left of the Lambda's time for writing the result and the outcome


class Outcome(StrEnum):
    DONE = "DONE"  # acknowledge: the message is deleted
    RETRY_LATER = "RETRY_LATER"  # report the item failed: SQS redelivers after the backoff
    BUSY = "BUSY"  # another executor holds the lease: redeliver when it expires


@dataclass(frozen=True)
class Delivery:
    """One SQS message as the executor received it."""

    body: str
    message_id: str
    receipt_handle: str
    queue_url: str
    band: Band | None = None
    receive_count: int = 1


class Heartbeat:
    """Extends the lease and the message's visibility while a long run works."""

    def __init__(
        self,
        store: JobStore,
        queues: RunQueues,
        clock: Clock,
        *,
        run_id: str,
        owner: str,
        delivery: Delivery,
        lease_for: timedelta,
        cancelled: threading.Event,
    ) -> None:
        self.store, self.queues, self.clock = store, queues, clock
        self.run_id, self.owner, self.delivery = run_id, owner, delivery
        self.lease_for = lease_for
        self.every = lease_for / 3
        self.cancelled = cancelled
        self.lost = False
        self.beats = 0
        self._next = clock.now() + self.every
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def maybe_beat(self) -> None:
        with self._lock:
            now = self.clock.now()
            if self.lost or now < self._next:
                return
            self._next = now + self.every
            if not self.store.extend_lease(self.run_id, owner=self.owner, lease_until=now + self.lease_for):
                self.lost = True
                self.cancelled.set()
                logger.error("lease lost: another executor took the run", extra={"run_id": self.run_id})
                return
            self.beats += 1
            # Visibility follows the lease: were this executor to die, the message returns when the lease ends.
            self.queues.change_visibility(
                self.delivery.queue_url, self.delivery.receipt_handle, int(self.lease_for.total_seconds()) + 5
            )

    def start(self) -> None:
        """A background beat for handlers that block without calling ctx.sleep (real time)."""

        def loop() -> None:
            while not self._stop.wait(self.every.total_seconds()):
                try:
                    self.maybe_beat()
                except Exception:  # a failed beat is retried at the next; the lease still has a margin
                    logger.exception("heartbeat failed", extra={"run_id": self.run_id})

        self._thread = threading.Thread(target=loop, name=f"heartbeat-{self.run_id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()


class RunExecutor:
    def __init__(
        self,
        store: JobStore,
        results: ResultStore,
        queues: RunQueues,
        job_types: JobTypeRegistry,
        clock: Clock,
        *,
        lease_for: timedelta = timedelta(seconds=60),
        rng: Random | None = None,
        http_allowlist: tuple[str, ...] = (),
        clients: Any = None,
    ) -> None:
        self.store = store
        self.results = results
        self.queues = queues
        self.job_types = job_types
        self.clock = clock
        self.lease_for = lease_for
        self.rng = rng
        self.http_allowlist = http_allowlist
        self.clients = clients

    def execute(self, delivery: Delivery, remaining_ms: Callable[[], int]) -> Outcome:
        try:
            message = RunMessage.model_validate_json(delivery.body)
        except ValidationError as exc:
            # A message nobody can run: park it on the DLQ with the reason instead of looping on it.
            logger.error("malformed run message", extra={"message_id": delivery.message_id, "errors": exc.errors()})
            self.queues.dead_letter_raw(delivery.band or Band.NORMAL, delivery.body, f"malformed message: {exc}")
            return Outcome.DONE
        logger.thread_safe_append_keys(run_id=message.run_id, job_id=message.job_id, tenant=message.tenant)
        try:
            return self._execute(message, delivery, remaining_ms)
        finally:
            logger.thread_safe_remove_keys(["run_id", "job_id", "tenant"])

    def _execute(self, message: RunMessage, delivery: Delivery, remaining_ms: Callable[[], int]) -> Outcome:
        owner = f"{delivery.message_id}:{uuid.uuid4().hex[:12]}"
        now = self.clock.now()
        lease = self.store.lease_run(message.run_id, owner=owner, now=now, lease_for=self.lease_for)
        if lease.outcome is LeaseOutcome.MISSING:
            logger.error("message for a run that does not exist")
            self.queues.dead_letter_raw(delivery.band or Band.NORMAL, delivery.body, "no such run")
            return Outcome.DONE
        if lease.outcome is LeaseOutcome.TERMINAL:
            logger.info("duplicate delivery of a finished run: acknowledged, not run")
            metrics.add_metric(name="DuplicateDeliveries", unit="Count", value=1)
            return Outcome.DONE
        if lease.outcome is LeaseOutcome.BUSY:
            assert lease.run is not None
            wait = 5
            if lease.run.lease_until is not None:
                wait = max(1, int((lease.run.lease_until - now).total_seconds()) + 1)
            self.queues.change_visibility(delivery.queue_url, delivery.receipt_handle, wait)
            logger.info("run is leased elsewhere; will look again", extra={"retry_in_s": wait})
            return Outcome.BUSY
        run = lease.run
        assert run is not None
        job = self.store.get_job(run.job_id)
        if job is None:
            return self._skip(run, owner, SkipReason.JOB_DELETED)
        if run.trigger is RunTrigger.SCHEDULE and job.state in (JobState.PAUSED, JobState.CANCELLED):
            reason = SkipReason.PAUSED if job.state is JobState.PAUSED else SkipReason.CANCELLED
            return self._skip(run, owner, reason)
        if job.overlap is OverlapPolicy.SKIP and self.store.running_runs_of_job(job.id, now=now, exclude=run.id):
            return self._skip(run, owner, SkipReason.OVERLAP)
        if lease.previous_status is RunStatus.RUNNING:
            # Taken over from an executor that died: it may have written the result before dying.
            existing = self.results.find(run)
            if existing is not None:
                logger.warning("result already written by a previous attempt; recording it, not re-running")
                return self._succeed(run, job, owner, existing, duration_ms=None)
        if run.attempts > job.retry.max_attempts:
            # Earlier attempts died without recording an outcome (a crashing run): stop here.
            error = RunError(type="AttemptsExhausted", message="attempts exhausted by executor crashes or timeouts")
            return self._fail(run, job, owner, error, delivery)
        # Start lateness measures the scheduler: a first attempt of a run nobody re-queued by hand.
        if (
            run.attempts == 1
            and run.requeues == 0
            and run.trigger is RunTrigger.SCHEDULE
            and run.lateness_ms is not None
        ):
            metrics.add_metric(name="StartLatenessMs", unit="Milliseconds", value=max(0, run.lateness_ms))
        return self._run(run, job, owner, delivery, remaining_ms)

    def _run(self, run: Run, job: Job, owner: str, delivery: Delivery, remaining_ms: Callable[[], int]) -> Outcome:
        try:
            job_type = self.job_types.get(job.type)
            payload = job_type.parse(job.payload, context={"http_allowlist": self.http_allowlist})
        except (UnknownJobType, ValidationError) as exc:
            invalid = RunError(type=type(exc).__name__, message=str(exc)[:2000])
            return self._fail(run, job, owner, invalid, delivery)
        budget = min(float(job.timeout_seconds), remaining_ms() / 1000 - SAFETY_MARGIN_SECONDS)
        started = self.clock.now()
        ctx = RunContext(
            run_id=run.id,
            job_id=job.id,
            tenant=job.tenant,
            attempt=run.attempts,
            deadline=started + timedelta(seconds=max(budget, 0)),
            clock=self.clock,
            http_allowlist=self.http_allowlist,
            clients=self.clients,
        )
        heartbeat = Heartbeat(
            self.store,
            self.queues,
            self.clock,
            run_id=run.id,
            owner=owner,
            delivery=delivery,
            lease_for=self.lease_for,
            cancelled=ctx.cancelled,
        )
        ctx.on_tick = heartbeat.maybe_beat
        logger.info("run started", extra={"attempt": run.attempts, "lateness_ms": run.lateness_ms, "type": job.type})
        error: RunError | None = None
        value: Any = None
        permanent = False
        if budget <= 0:
            error = RunError(type="RunTimeout", message="not enough Lambda time left to start the run")
        else:
            if budget > heartbeat.every.total_seconds():
                heartbeat.start()  # a run that can't outlive one interval never needs a beat: no thread
            try:
                value = _call_with_timeout(lambda: job_type.handler(payload, ctx), budget, ctx)
            except Exception as exc:
                permanent = isinstance(exc, PermanentJobError)
                error = RunError(type=type(exc).__name__, message=str(exc)[:2000] or type(exc).__name__)
            finally:
                heartbeat.stop()
        duration_ms = to_ms(self.clock.now()) - to_ms(started)
        metrics.add_metric(name="RunDurationMs", unit="Milliseconds", value=duration_ms)
        if heartbeat.lost:
            return Outcome.DONE  # the run belongs to another executor now; it records the outcome
        if error is None:
            try:
                result, written = self.results.write_once(run, value)
            except (TypeError, ValueError) as exc:
                error = RunError(type="UnserializableResult", message=str(exc)[:2000])
                return self._fail(run, job, owner, error, delivery)
            if not written:
                logger.warning("result existed already; the first write stands")
            return self._succeed(run, job, owner, result, duration_ms=duration_ms)
        if not permanent and run.attempts < job.retry.max_attempts:
            return self._retry(run, job, owner, error, delivery, duration_ms)
        return self._fail(run, job, owner, error, delivery, duration_ms=duration_ms)

    # ------------------------------------------------------------ outcomes

    def _succeed(self, run: Run, job: Job, owner: str, result: RunResult, *, duration_ms: int | None) -> Outcome:
        now = self.clock.now()
        recorded = self.store.finish_run(
            run, owner=owner, status=RunStatus.SUCCEEDED, now=now, result=result, duration_ms=duration_ms
        )
        if not recorded:
            logger.warning("lease lost before recording success; the result object stands")
            return Outcome.DONE
        if job.schedule.is_one_shot and run.trigger is RunTrigger.SCHEDULE:
            self.store.complete_one_shot(job.id, now)
        metrics.add_metric(name="RunsSucceeded", unit="Count", value=1)
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

    def _retry(self, run: Run, job: Job, owner: str, error: RunError, delivery: Delivery, duration_ms: int) -> Outcome:
        delay = backoff_seconds(job.retry, run.attempts, self.rng)
        if not self.store.finish_run(
            run,
            owner=owner,
            status=RunStatus.RETRYING,
            now=self.clock.now(),
            error=error,
            duration_ms=duration_ms,
        ):
            return Outcome.DONE
        self.queues.change_visibility(delivery.queue_url, delivery.receipt_handle, delay)
        metrics.add_metric(name="RunsRetried", unit="Count", value=1)
        logger.warning(
            "run failed; retrying",
            extra={
                "attempt": run.attempts,
                "max_attempts": job.retry.max_attempts,
                "retry_in_s": delay,
                "error_type": error.type,
                "error": error.message,
            },
        )
        return Outcome.RETRY_LATER

    def _fail(
        self,
        run: Run,
        job: Job,
        owner: str,
        error: RunError,
        delivery: Delivery,
        *,
        duration_ms: int | None = None,
    ) -> Outcome:
        now = self.clock.now()
        if not self.store.finish_run(
            run, owner=owner, status=RunStatus.FAILED, now=now, error=error, duration_ms=duration_ms
        ):
            return Outcome.DONE
        self.queues.dead_letter(
            run.band,
            DeadLetter(
                run_id=run.id,
                job_id=run.job_id,
                tenant=run.tenant,
                attempts=run.attempts,
                error=error,
                failed_at=now,
            ),
        )
        metrics.add_metric(name="RunsFailed", unit="Count", value=1)
        logger.error(
            "run failed; no attempts left",
            extra={"attempt": run.attempts, "error_type": error.type, "error": error.message},
        )
        return Outcome.DONE

    def _skip(self, run: Run, owner: str, reason: SkipReason) -> Outcome:
        self.store.finish_run(run, owner=owner, status=RunStatus.SKIPPED, now=self.clock.now(), skip_reason=reason)
        metrics.add_metric(name="RunsSkipped", unit="Count", value=1)
        logger.info("run skipped", extra={"skip_reason": reason.value})
        return Outcome.DONE


def _call_with_timeout(fn: Callable[[], Any], budget: float, ctx: RunContext) -> Any:
    """Run `fn` in a worker thread; give up after `budget` seconds of real time, or of the clock's time."""
    started: datetime = ctx.clock.now()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"run-{ctx.run_id}")
    future = pool.submit(fn)
    try:
        value = future.result(timeout=budget)
    except FuturesTimeout:
        ctx.cancelled.set()  # cooperative handlers stop at their next ctx.check()/ctx.sleep()
        raise RunTimeout(f"run exceeded its timeout of {budget:.0f}s") from None
    finally:
        pool.shutdown(wait=False)
    if (ctx.clock.now() - started).total_seconds() > budget + 1e-3:
        raise RunTimeout(f"run exceeded its timeout of {budget:.0f}s")
    return value
