"""Run one delivered run message: lease, check the job, run its type's handler, record the outcome.

Promises kept here:
- 3, effect once: a terminal run is acknowledged without running; a result is written with
  If-None-Match: *, and a run taken over from a dead executor first looks for the result it may have left
  (an existing result wins over everything else, a pause included).
- 4, one place at a time: the lease is a conditional write (QUEUED, RETRYING past its backoff, or RUNNING
  with an expired lease, becomes RUNNING). The message's visibility follows the lease from before the lease
  is written, so an executor that dies at any point is replaced within lease + VISIBILITY_MARGIN_SECONDS.
  The lease is held, and extended by a heartbeat, for as long as the handler really runs: a timed-out
  handler is cancelled, and its outcome recorded only once it has returned. A job type whose effect may go
  on after the handler gave up (a Lambda invoked synchronously) says for how long, and the next attempt
  may not start before then.
- 5, retries: exponential backoff with full jitter. The earliest next attempt (`not_before`) is in the run
  record and the lease's condition, so no duplicate message can start it early. A backoff up to
  MAX_MESSAGE_BACKOFF_SECONDS rides on the message (ChangeMessageVisibility); a longer one parks the run in
  the due index, and the tick sends a fresh message at its time, so no retry depends on a message outliving
  SQS's retention or its 12-hour visibility cap. Then FAILED, with the error, on the band's DLQ;
  paused/cancelled/overlapping runs are recorded SKIPPED with the reason.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from tickwork.backoff import Random, backoff_seconds
from tickwork.clock import Clock, to_ms
from tickwork.jobtypes import EffectMayContinue, PermanentJobError, RunContext, RunTimeout, UnknownJobType
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
VISIBILITY_MARGIN_SECONDS = 15  # a message comes back this long after its run's lease has ended
MAX_MESSAGE_BACKOFF_SECONDS = 900  # longer backoffs park the run in the due index (a fresh message, on time)


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
    """Extends the lease (and the job's running slot, under overlap SKIP) and the message's visibility while a
    run works. It beats for as long as the handler runs, even past the executor's own wait: it stops when the
    handler returns (or when told to, before the handler starts)."""

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
        slot_job_id: str | None = None,
    ) -> None:
        self.store, self.queues, self.clock = store, queues, clock
        self.run_id, self.owner, self.delivery = run_id, owner, delivery
        self.lease_for = lease_for
        self.every = lease_for / 3
        self.cancelled = cancelled
        self.slot_job_id = slot_job_id
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
            lease_until = now + self.lease_for
            if not self.store.extend_lease(self.run_id, owner=self.owner, lease_until=lease_until):
                self.lost = True
                self.cancelled.set()
                logger.error("lease lost: another executor took the run", extra={"run_id": self.run_id})
                return
            if self.slot_job_id is not None:
                self.store.extend_running_slot(self.slot_job_id, run_id=self.run_id, until=lease_until)
            self.beats += 1
            # Visibility follows the lease: were this executor to die, the message returns when the lease ends.
            self.queues.change_visibility(
                self.delivery.queue_url, self.delivery.receipt_handle, visibility_for(self.lease_for)
            )

    def start(self) -> None:
        """A background beat for handlers that block without calling ctx.sleep (real time). Idempotent."""
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return

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


def visibility_for(lease_for: timedelta) -> int:
    return int(lease_for.total_seconds()) + VISIBILITY_MARGIN_SECONDS


class HandlerStillRunning(Exception):
    """The handler ignored its cancellation until the Lambda's own time ran out: its outcome is unknown, so
    nothing is recorded; the lease stays held (beating) until it returns or the process dies."""


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
        retry_safety_net: timedelta = timedelta(seconds=150),
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
        # How long after a message-borne retry's time the tick re-sends it, were its message never to come back.
        self.retry_safety_net = retry_safety_net
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
        # Before the lease exists, the message is set to come back when the lease would end: an executor that
        # dies at any point from here on (timeout, out of memory, SIGKILL) strands nothing for longer than
        # the lease + VISIBILITY_MARGIN_SECONDS, rather than the queue's 90-minute visibility.
        self.queues.change_visibility(delivery.queue_url, delivery.receipt_handle, visibility_for(self.lease_for))
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
        if lease.outcome in (LeaseOutcome.BUSY, LeaseOutcome.EARLY):
            return self._not_yet(lease.run, lease.outcome, delivery, now)
        run = lease.run
        assert run is not None
        assert lease.lease_until is not None
        job = self.store.get_job(run.job_id)
        if job is None:
            return self._skip(run, None, owner, SkipReason.JOB_DELETED)
        if lease.previous_status is RunStatus.RUNNING:
            # Taken over from an executor that died: it may have written the result before dying. That
            # result is the run's effect, and it wins over everything else (a pause or cancel included).
            existing = self.results.find(run)
            if existing is not None:
                logger.warning("result already written by a previous attempt; recording it, not re-running")
                return self._succeed(run, job, owner, existing, duration_ms=None)
        if run.trigger is RunTrigger.SCHEDULE and job.state in (JobState.PAUSED, JobState.CANCELLED):
            reason = SkipReason.PAUSED if job.state is JobState.PAUSED else SkipReason.CANCELLED
            return self._skip(run, job, owner, reason)
        if run.attempts > job.retry.max_attempts:
            # Earlier attempts died without recording an outcome (a crashing run): stop here.
            error = RunError(type="AttemptsExhausted", message="attempts exhausted by executor crashes or timeouts")
            return self._fail(run, job, owner, error, delivery)
        if job.overlap is OverlapPolicy.SKIP and not self.store.take_running_slot(
            job.id, run_id=run.id, until=lease.lease_until, now=now
        ):
            # The slot is one conditional write on the job: of two runs starting together, exactly one runs.
            return self._skip(run, job, owner, SkipReason.OVERLAP)
        # Start lateness measures the scheduler: a first attempt of a run nobody re-queued by hand.
        if (
            run.attempts == 1
            and run.requeues == 0
            and run.trigger is RunTrigger.SCHEDULE
            and run.lateness_ms is not None
        ):
            metrics.add_metric(name="StartLatenessMs", unit="Milliseconds", value=max(0, run.lateness_ms))
        return self._run(run, job, owner, delivery, remaining_ms)

    def _not_yet(self, current: Run | None, outcome: LeaseOutcome, delivery: Delivery, now: datetime) -> Outcome:
        """Another executor holds the run (BUSY), or its backoff has not ended (EARLY): look again then."""
        assert current is not None
        until = current.lease_until if outcome is LeaseOutcome.BUSY else current.not_before
        wait = 5 if until is None else max(1, math.ceil((until - now).total_seconds()))
        if outcome is LeaseOutcome.EARLY and wait > MAX_MESSAGE_BACKOFF_SECONDS:
            logger.info("duplicate of a parked retry: acknowledged; the tick sends the retry at its time")
            return Outcome.DONE
        self.queues.change_visibility(delivery.queue_url, delivery.receipt_handle, wait)
        logger.info("run not available yet; will look again", extra={"retry_in_s": wait, "reason": outcome.value})
        return Outcome.BUSY

    def _run(self, run: Run, job: Job, owner: str, delivery: Delivery, remaining_ms: Callable[[], int]) -> Outcome:
        slot = job.id if job.overlap is OverlapPolicy.SKIP else None
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
            slot_job_id=slot,
        )
        ctx.on_tick = heartbeat.maybe_beat
        logger.info("run started", extra={"attempt": run.attempts, "lateness_ms": run.lateness_ms, "type": job.type})
        error: RunError | None = None
        value: Any = None
        permanent = False
        effect_busy_seconds = 0.0
        if budget <= 0:
            heartbeat.stop()
            error = RunError(type="RunTimeout", message="not enough Lambda time left to start the run")
        else:
            try:
                value = _call_under_lease(
                    lambda: job_type.handler(payload, ctx),
                    budget,
                    ctx,
                    heartbeat,
                    seconds_left=lambda: remaining_ms() / 1000 - SAFETY_MARGIN_SECONDS,
                )
            except HandlerStillRunning:
                logger.error(
                    "handler ignored its cancellation past the Lambda's time: nothing recorded, lease held while it runs",
                    extra={"attempt": run.attempts, "type": job.type},
                )
                metrics.add_metric(name="HandlersOverrunning", unit="Count", value=1)
                return Outcome.BUSY
            except Exception as exc:
                permanent = isinstance(exc, PermanentJobError)
                if isinstance(exc, EffectMayContinue):
                    effect_busy_seconds = exc.busy_seconds
                error = RunError(type=type(exc).__name__, message=str(exc)[:2000] or type(exc).__name__)
        duration_ms = to_ms(self.clock.now()) - to_ms(started)
        metrics.add_metric(name="RunDurationMs", unit="Milliseconds", value=duration_ms)
        if heartbeat.lost:
            return Outcome.DONE  # the run belongs to another executor now; it records the outcome
        try:
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
                return self._retry(run, job, owner, error, delivery, duration_ms, at_least=effect_busy_seconds)
            return self._fail(run, job, owner, error, delivery, duration_ms=duration_ms)
        finally:
            if slot is not None:
                self.store.release_running_slot(slot, run_id=run.id)

    # ------------------------------------------------------------ outcomes

    def _settled(self, run: Run, job: Job | None, now: datetime) -> None:
        """A scheduled run reached a terminal state: if it was the job's last occurrence, the job completes.

        The store completes it only while nothing else is pending (a PATCH may have added an occurrence)."""
        if job is None or job.state is not JobState.ACTIVE or run.trigger is not RunTrigger.SCHEDULE:
            return
        if job.next_occurrence_after(run.scheduled_for) is None and self.store.complete_if_settled(job.id, now):
            logger.info("job completed: its last occurrence has settled", extra={"job_id": job.id})

    def _succeed(self, run: Run, job: Job, owner: str, result: RunResult, *, duration_ms: int | None) -> Outcome:
        now = self.clock.now()
        recorded = self.store.finish_run(
            run, owner=owner, status=RunStatus.SUCCEEDED, now=now, result=result, duration_ms=duration_ms
        )
        if not recorded:
            logger.warning("lease lost before recording success; the result object stands")
            return Outcome.DONE
        self._settled(run, job, now)
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

    def _retry(
        self,
        run: Run,
        job: Job,
        owner: str,
        error: RunError,
        delivery: Delivery,
        duration_ms: int,
        *,
        at_least: float = 0.0,
    ) -> Outcome:
        delay = max(backoff_seconds(job.retry, run.attempts, self.rng), math.ceil(at_least))
        now = self.clock.now()
        not_before = now + timedelta(seconds=delay)
        on_message = delay <= MAX_MESSAGE_BACKOFF_SECONDS
        if not self.store.finish_run(
            run,
            owner=owner,
            status=RunStatus.RETRYING,
            now=now,
            error=error,
            duration_ms=duration_ms,
            not_before=not_before,
            # On the message: a safety net, were it never to come back. Parked: the retry itself.
            resend_at=not_before + self.retry_safety_net if on_message else not_before,
        ):
            return Outcome.DONE
        metrics.add_metric(name="RunsRetried", unit="Count", value=1)
        logger.warning(
            "run failed; retrying",
            extra={
                "attempt": run.attempts,
                "max_attempts": job.retry.max_attempts,
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
        self._settled(run, job, now)
        metrics.add_metric(name="RunsFailed", unit="Count", value=1)
        logger.error(
            "run failed; no attempts left",
            extra={"attempt": run.attempts, "error_type": error.type, "error": error.message},
        )
        return Outcome.DONE

    def _skip(self, run: Run, job: Job | None, owner: str, reason: SkipReason) -> Outcome:
        now = self.clock.now()
        if self.store.finish_run(run, owner=owner, status=RunStatus.SKIPPED, now=now, skip_reason=reason):
            self._settled(run, job, now)
        metrics.add_metric(name="RunsSkipped", unit="Count", value=1)
        logger.info("run skipped", extra={"skip_reason": reason.value})
        return Outcome.DONE


def _call_under_lease(
    fn: Callable[[], Any],
    budget: float,
    ctx: RunContext,
    heartbeat: Heartbeat,
    *,
    seconds_left: Callable[[], float],
) -> Any:
    """Run `fn` in a worker thread while the heartbeat holds the lease; return its value or raise its error.

    At `budget` seconds the run is cancelled (ctx.cancelled: cooperative handlers stop at their next
    ctx.check()/ctx.sleep()). The lease is held until the handler has really returned, so a retry never
    starts beside a handler that is still running; a handler that returns late is recorded as it returned
    (its effect happened). If it outlives even the Lambda's time, HandlerStillRunning: nothing is recorded,
    and the heartbeat goes on until the handler returns or the process dies (with it, the lease ends)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"run-{ctx.run_id}")
    future: Future[Any] = pool.submit(fn)
    future.add_done_callback(lambda _: heartbeat.stop())
    pool.shutdown(wait=False)
    if budget > heartbeat.every.total_seconds():
        heartbeat.start()  # a run that can't outlive one interval in time needs no beat unless it overruns
    # wait() rather than result(timeout=): a handler's own RunTimeout is a TimeoutError too, as is the
    # futures module's, so only done() tells "still running" from "ended by a timeout".
    if not wait([future], timeout=budget).done:
        ctx.cancelled.set()
        heartbeat.start()
        logger.warning("run over its timeout: cancelled; waiting for the handler to stop", extra={"budget_s": budget})
        while not future.done():
            left = seconds_left()
            if left <= 0:
                raise HandlerStillRunning(ctx.run_id)
            wait([future], timeout=min(left, 1.0))
        late = future.exception()
        if late is not None and not isinstance(late, RunTimeout | EffectMayContinue | PermanentJobError):
            raise RunTimeout(f"run exceeded its timeout of {budget:.0f}s and then failed: {late}") from late
    return future.result()
