"""Run one delivered run message: lease, check the job, run its type's handler, record the outcome.

A workflow step's run is run the same way; what it runs (type, payload, retry, timeout) comes from its
workflow run's snapshot instead of a job (tickwork.model.run_target), and its end is recorded in its workflow run,
which starts what that allows (tickwork.progress.workflow_progress). A step whose workflow run was cancelled is not
started (SKIPPED `cancelled`); one already running is asked to stop through its heartbeat, and if it then
raises it is recorded SKIPPED `cancelled`, not retried.

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
  SQS's retention or its 12-hour visibility cap. Then FAILED, with the error (the API's DLQ), its message
  acknowledged: a band's SQS dead-letter queue holds only the messages the executor could not process;
  paused/cancelled/overlapping runs are recorded SKIPPED with the reason.
- Admission (tickwork.executor.admission): after the lease, the gates below (held back, attempts, overlap, limits)
  answer in one shape, in order; the first refusal is recorded, what the earlier gates admitted given back first.
- Overlap (tickwork.executor.overlap): after the lease, a job whose policy is not ALLOW takes its running slot, held
  with the lease; a run that cannot is skipped, or deferred like a limit's (waiting in BUFFER_ONE's one wait slot, or
  for the run CANCEL_OTHER asked to stop), its attempt not consumed. A run that yields keeps it (and its ordering
  key's turn) between its segments, until it ends (tickwork.executor.yields).
- Ordering keys (tickwork.executor.ordering): a run of a key (or of a BUFFER_ALL job) waits, deferred like a limit's,
  until the earlier runs of its key have ended; it holds the key's turn until it ends.
- Limits (tickwork.executor.limits): after the lease and before the handler, the run takes its tenant's concurrency
  quota and its concurrency key's slot (held with the lease, given back at its end), then its rate's turn. A run
  over a limit is deferred: the lease given back in one write with the attempt not consumed, and the message
  back after the wait (the lease refuses it earlier), so nothing spins and nothing is lost.
- Secrets by reference (tickwork.executor.secrets): resolved in the handler's thread just before it is called, and
  hidden from everything the attempt writes (its result, error, log lines) until its outcome is recorded.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from pydantic import ValidationError

from tickwork.aws.queues import PRECISE_LEAD_SECONDS, RunQueues
from tickwork.aws.results import ResultStore
from tickwork.executor import run_metrics
from tickwork.executor.admission import (
    Admitted,
    AttemptsGate,
    Deferral,
    Entry,
    Gate,
    Held,
    Hold,
    Refused,
    Skip,
    admit,
)
from tickwork.executor.breaker import HeldBackGate
from tickwork.executor.checkpoints import LeasedCheckpoints
from tickwork.executor.deadline_gate import DeadlineGate, stopped_by_deadline
from tickwork.executor.delivery import Delivery, Outcome, visibility_for
from tickwork.executor.heartbeat import HandlerStillRunning, Heartbeat, call_under_lease
from tickwork.executor.isolation import NO_SANDBOX, JobSandboxCalls
from tickwork.executor.limits import RunLimits
from tickwork.executor.live_logs import LiveLog
from tickwork.executor.ordering import OrderingGate
from tickwork.executor.outcomes import MAX_MESSAGE_BACKOFF_SECONDS, RunOutcomes, StepSettlement
from tickwork.executor.overlap import CANCEL_POLL_SECONDS, OverlapGate
from tickwork.executor.progress_reports import ProgressReports
from tickwork.executor.run_warnings import RunWatch
from tickwork.executor.secrets import RunSecrets, SecretCache
from tickwork.executor.variant_guard import VariantGuard
from tickwork.executor.yields import THE_900_SECOND_LAMBDAS, LambdaMargins, RunYields, kept_until, segment_budget
from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.jobtypes import (
    EffectMayContinue,
    Isolation,
    JobType,
    PermanentJobError,
    RetryNotBefore,
    RunContext,
    UnknownJobType,
)
from tickwork.jobtypes.durable import RunCheckpoints, Yielded
from tickwork.jobtypes.registry import JobTypeRegistry
from tickwork.model.backoff import Random, wait_within_cap
from tickwork.model.clock import Clock, to_ms
from tickwork.model.forecast_uses import DEFAULT_SLOW_FACTOR
from tickwork.model.messages import RunMessage
from tickwork.model.policies import Band, OverlapPolicy
from tickwork.model.regions import EVERY_REGION, Admission
from tickwork.model.run import Run, RunError
from tickwork.model.run_spec import trusted_spec
from tickwork.model.run_target import RunTarget
from tickwork.model.states import RunStatus, SkipReason
from tickwork.model.targets import DEFAULT_TARGETS, TargetRules
from tickwork.model.workflow.runs import WorkflowRunRecord
from tickwork.observability import logger, metrics, secret_mask
from tickwork.progress.run_events import RunEvents
from tickwork.store import JobStore, LeaseOutcome
from tickwork.store.checkpoints import CheckpointRecords, StoredCheckpoint
from tickwork.store.regions import OPEN_FENCE, RegionFence
from tickwork.store.variants import VariantTallies

__all__ = ["Delivery", "Outcome", "RunExecutor"]  # the executor's handler takes all three from here

# A precise run's message arrives at most this early (its lead and SQS's whole-second delays), with room for the
# clocks of the tick and the executor to disagree by a little.
MAX_PRECISE_WAIT_SECONDS = PRECISE_LEAD_SECONDS + 1.5


class WorkflowSteps(StepSettlement, Protocol):
    """What the executor needs of workflows (tickwork.progress.workflow_progress.WorkflowProgress): a step's workflow
    run (its snapshot says what the step runs), and where the step's end goes."""

    def workflow_run(self, workflow_run_id: str) -> WorkflowRunRecord | None: ...


@dataclass(frozen=True)
class Handlers:
    """The job types' handlers and what each is given to reach out with (where it may reach, its AWS clients, the
    secrets its payload names: none wired, a reference fails its run), and where a function-isolated one runs (the
    job sandbox: none wired, its runs fail)."""

    job_types: JobTypeRegistry
    targets: TargetRules = DEFAULT_TARGETS
    clients: Any = None
    secrets: SecretCache | None = None
    sandbox: JobSandboxCalls = NO_SANDBOX


@dataclass(frozen=True)
class Attempt:
    """How the handler's call ended: its value, or its error (permanent: never retried; the next attempt not
    before `wait_at_least_seconds`)."""

    value: Any = None
    error: RunError | None = None
    permanent: bool = False
    wait_at_least_seconds: float = 0.0


# One piece over 250 lines: it is the run's one path from message to outcome, each step a short method; the
# admission (tickwork.executor.admission), the heartbeat and the outcomes' writes (tickwork.executor.outcomes)
# are their own classes already.
class RunExecutor:
    def __init__(
        self,
        store: JobStore,
        results: ResultStore,
        queues: RunQueues,
        handlers: Handlers,
        clock: Clock,
        *,
        lease_for: timedelta = timedelta(seconds=60),
        retry_safety_net: timedelta = timedelta(seconds=150),
        rng: Random | None = None,
        faults: FaultPlan = NO_FAULTS,
        workflows: WorkflowSteps | None = None,
        limits: RunLimits | None = None,
        events: RunEvents | None = None,
        freezes: Gate | None = None,
        margins: LambdaMargins = THE_900_SECOND_LAMBDAS,
        slow_factor: float = DEFAULT_SLOW_FACTOR,
        fence: RegionFence = OPEN_FENCE,
    ) -> None:
        self.jobs, self.runs, self.leases = store.jobs, store.runs, store.leases
        # RegionMode eventual: only the active region leases and records outcomes (docs/regions.md).
        self.fence = fence
        self.margins = margins  # of the executor Lambda's time: for recording the outcome, and for yielding
        self.results, self.queues, self.clock = results, queues, clock
        self.handlers = handlers
        self.lease_for = lease_for
        self.faults = faults
        self.workflows = workflows
        self.outcomes = RunOutcomes(
            self.jobs,
            self.runs,
            self.leases,
            store.breakers,
            queues,
            clock,
            retry_safety_net=retry_safety_net,
            rng=rng,
            faults=faults,
            steps=workflows,
            results=results,
            events=events,
            guard=VariantGuard(VariantTallies(store.shared_table), self.jobs, self.runs, clock, events=events),
            slow_factor=slow_factor,
        )
        self.limits = limits
        self.checkpoints = CheckpointRecords(store.shared_table)
        self.yields = RunYields(self.leases, queues, clock, self.outcomes, lease_for=lease_for)
        # The two gates whose holds a yielded run keeps between its segments (see _kept_between_segments).
        self.overlap = OverlapGate(store.slots, self.leases)
        self.ordering = OrderingGate(self.runs.ordering, self.runs, rng=rng)
        self._gates: list[Gate] = [
            HeldBackGate(self.outcomes.breakers),
            AttemptsGate(),
            DeadlineGate(),
            self.overlap,
            self.ordering,
        ]
        if freezes is not None:  # a run a freeze marked (tickwork.executor.freeze_gate): before it takes a slot
            self._gates.insert(1, freezes)

    @property
    def gates(self) -> list[Gate]:
        """Admission's gates, in this order: a run skipped anyway takes no turn of its ordering key, one whose turn
        it is not takes no slot, and one refused a slot takes no turn of a rate (limits: none when not wired)."""
        return [*self._gates, self.limits] if self.limits is not None else self._gates

    @property
    def rng(self) -> Random | None:
        """The backoff's randomness (tests fix it)."""
        return self.outcomes.rng

    @rng.setter
    def rng(self, value: Random | None) -> None:
        self.outcomes.rng = value

    def execute(self, delivery: Delivery, remaining_ms: Callable[[], int]) -> Outcome:
        try:
            message = RunMessage.model_validate_json(delivery.body)
        except ValidationError as exc:
            # A message nobody can run: on the band's SQS dead-letter queue with the reason, not looped on.
            # Without the input: a message may carry a job's payload, which is never logged.
            errors = exc.errors(include_input=False, include_url=False)
            logger.error("malformed run message", extra={"message_id": delivery.message_id, "errors": errors})
            self.queues.dead_letter_unprocessable(
                delivery.band or Band.NORMAL, delivery.body, f"malformed message: {exc}"
            )
            return Outcome.DONE
        logger.thread_safe_append_keys(run_id=message.run_id, job_id=message.job_id, tenant=message.tenant)
        try:
            return self._execute(message, delivery, remaining_ms)
        except Exception:
            # The batch reports the record failed and logs no more (Powertools, at debug): said here, with the run,
            # since its message then waits out its visibility (the queue's 5,400 s, if it was never changed).
            logger.exception(
                "run message not carried through; it comes back when its visibility ends",
                extra={"run_id": message.run_id},
            )
            raise
        finally:
            logger.thread_safe_remove_keys(["run_id", "job_id", "tenant"])

    def hold_batch(self, deliveries: Sequence[Delivery]) -> list[Delivery]:
        """A batch's messages set to come back when their leases would end, ten to a request instead of one
        each (the records of a batch start together, on threads: tickwork.executor.batch): the deliveries, each marked
        `held` if its visibility was set. One alone, or a request that fails, leaves that to `execute`."""
        if len(deliveries) < 2:
            return list(deliveries)
        by_queue: dict[str, dict[str, str]] = {}
        for delivery in deliveries:
            by_queue.setdefault(delivery.queue_url, {})[delivery.message_id] = delivery.receipt_handle
        held: set[str] = set()
        for queue_url, receipts in by_queue.items():
            try:
                held |= self.queues.change_visibility_batch(queue_url, receipts, visibility_for(self.lease_for))
            except Exception:  # each record then sets its own, as it would without this
                logger.exception("the batch's visibility could not be set at once; each record sets its own")
        return [replace(d, held=True) if d.message_id in held else d for d in deliveries]

    def _execute(self, message: RunMessage, delivery: Delivery, remaining_ms: Callable[[], int]) -> Outcome:
        owner = f"{delivery.message_id}:{uuid.uuid4().hex[:12]}"
        self.faults.reached(CrashPoint.EXECUTOR_ON_RECEIVE)
        # Before the lease exists, the message is set to come back when the lease would end: an executor that
        # dies at any point from here on (timeout, out of memory, SIGKILL) strands nothing for longer than
        # the lease + VISIBILITY_MARGIN_SECONDS, rather than the queue's 90-minute visibility. Done with its
        # batch's, in one request, unless that request left it out (hold_batch).
        if not delivery.held:
            self.queues.change_visibility(delivery.queue_url, delivery.receipt_handle, visibility_for(self.lease_for))
        if message.precise:
            self._wait_for_instant(message)
        if (admitted := self.fence.admit("lease")) is None:
            # Not the active region: no lease, no effect. Its message is let go; the active region's resender sends
            # the run (its due-index entry stays until an outcome).
            return Outcome.DONE
        now = self.clock.now()
        lease = self.leases.lease_run(message.run_id, owner=owner, now=now, lease_for=self.lease_for)
        if lease.outcome is LeaseOutcome.MISSING:
            logger.error("message for a run that does not exist")
            self.queues.dead_letter_unprocessable(delivery.band or Band.NORMAL, delivery.body, "no such run")
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
        self.faults.reached(CrashPoint.EXECUTOR_AFTER_LEASE)
        target = self._target(run, message, lease.previous_status, now)
        self.faults.reached(CrashPoint.EXECUTOR_AFTER_JOB_READ)
        if target is None:
            return self.outcomes.skip(run, None, owner, SkipReason.JOB_DELETED)
        if lease.previous_status is RunStatus.RUNNING:
            # Taken over from an executor that died: it may have written the result before dying. That
            # result is the run's effect, and it wins over everything else (a pause or cancel included).
            existing = self.results.find_anywhere(run)
            if existing is not None:
                logger.warning("result already written by a previous attempt; recording it, not re-running")
                outcome = self.outcomes.succeed(run, target, owner, existing, duration_ms=None, started=now)
                self._kept_between_segments(run, target).release()
                return outcome
        if lease.cancel_requested and run.segments > 0:
            # Asked to stop between its segments (a newer run under CANCEL_OTHER, the cancel API): it ends here.
            outcome = self.outcomes.skip(run, target, owner, SkipReason.CANCELLED)
            self._kept_between_segments(run, target).release()
            return outcome
        admission = admit(self.gates, Entry(run, target, owner, until=lease.lease_until, now=now))
        if not isinstance(admission, Admitted):
            return self._refused(admission, run, owner, lease.previous_status, delivery, now)
        target = admission.entry.target
        run_metrics.count_start_lateness(run)
        # What admitted the run is given back however it ends, but a process that dies (a BaseException: killed,
        # timed out) gives back nothing: it ends with its lease. Its secrets' values are hidden until its outcome
        # is recorded.
        secrets = RunSecrets(self.handlers.secrets, self.handlers.targets.secrets_for(target.tenant))
        try:
            outcome = self._run(
                run,
                target,
                owner,
                delivery,
                remaining_ms,
                admission.held,
                secrets,
                leased_at=now,
                checkpoint=lease.checkpoint,
                admitted=admitted,
            )
        except Exception:
            admission.held.release()
            raise
        finally:
            secrets.release()
        admission.held.release()
        return outcome

    def _refused(
        self, refused: Refused, run: Run, owner: str, previous: RunStatus | None, delivery: Delivery, now: datetime
    ) -> Outcome:
        """A gate's refusal recorded (tickwork.executor.admission). What the gates before it took is given back
        first, so the run holds nothing, unless it is a yielded run's next segment: waiting, it keeps what it
        keeps between segments; ended, it gives that back too."""
        refusal, target = refused.refusal, refused.entry.target
        if isinstance(refusal, Deferral):
            if run.segments > 0:
                self._carry(refused.held, refusal.wait_seconds)
            refused.held.release()
            return self.outcomes.defer(run, owner, previous, refusal, delivery, started=now)
        refused.held.release()
        if isinstance(refusal, Skip):
            outcome = self.outcomes.skip(run, target, owner, refusal.reason)
        else:
            outcome = self.outcomes.fail(run, target, owner, refusal.error, started=now)
        if run.segments > 0:
            self._kept_between_segments(run, target).release()
        return outcome

    def _carry(self, held: Held, wait_seconds: float) -> None:
        """A yielded run that waits `wait_seconds` for its next start keeps what it keeps between segments until the
        tick would send it again, and a lease more (tickwork.executor.yields.kept_until)."""
        resend_at = self.clock.now() + timedelta(seconds=wait_seconds) + self.outcomes.retry_safety_net
        held.carry(kept_until(resend_at, self.lease_for))

    def _kept_between_segments(self, run: Run, target: RunTarget) -> Held:
        """What a yielded run keeps between its segments (its job's running slot, its ordering key's turn), to give
        back when it ends where no gate took them again (held back, failed, a takeover's result). Each is given
        back only by its holder: a run that holds none of them gives back nothing."""
        holds: list[Hold | None] = [
            self.overlap.carried(run, target.owner_id) if target.overlap.takes_running_slot else None,
            self.ordering.carried(run),
        ]
        return Held([hold for hold in holds if hold is not None])

    def _target(self, run: Run, message: RunMessage, previous: RunStatus | None, now: datetime) -> RunTarget | None:
        """What the run runs: its job (by the message's copy where that is trusted, tickwork.model.run_spec, else as
        read now), or its workflow step (from its workflow run); None if that is gone."""
        if run.workflow_run_id is None:
            spec = trusted_spec(message, run, previous, now)
            if spec is not None:
                return RunTarget.of_spec(spec, run)
            job = self.jobs.get_job(run.job_id)
            return RunTarget.of_job(job, run) if job is not None else None
        if self.workflows is None:
            logger.error("a workflow step's run, but this executor has no workflows wired")
            return None
        record = self.workflows.workflow_run(run.workflow_run_id)
        return RunTarget.of_step(record, run) if record is not None and record.definition is not None else None

    def _wait_for_instant(self, message: RunMessage) -> None:
        """A precise run arrives up to PRECISE_LEAD + 1 s early (tickwork.aws.queues.precise_delay_for): wait out the
        rest here, before the lease, so that it starts on its instant. The batch's records run on threads, so a
        batch waits once, not once per run. Earlier than that (a clock far off), it is not waited for: the
        lease's not_before refuses it and the message comes back at its time."""
        wait = (message.scheduled_for - self.clock.now()).total_seconds()
        if 0 < wait <= MAX_PRECISE_WAIT_SECONDS:
            self.clock.sleep(wait)

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

    def _run(
        self,
        run: Run,
        target: RunTarget,
        owner: str,
        delivery: Delivery,
        remaining_ms: Callable[[], int],
        held: Held,
        secrets: RunSecrets,
        *,
        leased_at: datetime,
        checkpoint: StoredCheckpoint | None = None,
        admitted: Admission = EVERY_REGION,
    ) -> Outcome:
        """Run the handler under the lease and record how the attempt (which began at `leased_at`) ended; what
        the handler logged is kept beside the result first (tickwork.jobtypes.run_log). The handler starts from
        the run's last `checkpoint`, as the lease found it (tickwork.executor.checkpoints), and its payload's
        secrets are resolved in its thread (`secrets`)."""
        context = self.handlers.targets.context(target.tenant)
        try:
            job_type = self.handlers.job_types.get(target.type)
            payload = job_type.parse(target.payload, context=context)
        except (UnknownJobType, ValidationError) as exc:
            invalid = RunError(type=type(exc).__name__, message=str(exc)[:2000])
            return self.outcomes.fail(run, target, owner, invalid, started=leased_at)
        segment = segment_budget(
            target.timeout_seconds,
            remaining_ms() / 1000 - self.margins.recording,
            target.max_run_seconds - run.yielded_ms / 1000,
            yield_margin=self.margins.yielding,
        )
        budget = segment.seconds
        started = self.clock.now()
        ctx = self._context(run, target, started, budget)
        ctx.yield_at = started + timedelta(seconds=segment.yield_after)
        heartbeat = self._heartbeat(run, target, owner, delivery, ctx, held)
        if run.forecast_p99_ms is not None:  # claimed with a forecast: its beats look for its warnings
            heartbeat.watch = RunWatch(run, started, self.outcomes.slow, target.notify)
        reports = ProgressReports(self.leases, self.clock, run_id=run.id, owner=owner)
        ctx.progress_sink = heartbeat.progress = reports
        heartbeat.live_log = LiveLog(self.results, run, ctx.logger)
        ctx.checkpoints = RunCheckpoints(
            LeasedCheckpoints(
                self.checkpoints,
                self.results,
                self.clock,
                run=run,
                owner=owner,
                stored=checkpoint,
                on_lost=heartbeat.lease_lost,
            )
        )
        logger.info("run started", extra={"attempt": run.attempts, "lateness_ms": run.lateness_ms, "type": target.type})
        handler: Callable[[], Any]
        if job_type.isolation is Isolation.FUNCTION:
            handler = lambda: self._sandboxed(job_type, target, context, secrets, ctx)  # noqa: E731
        elif RunSecrets.needed(target.payload):
            handler = lambda: job_type.handler(secrets.payload(job_type, target.payload, context), ctx)  # noqa: E731
        else:
            handler = lambda: job_type.handler(payload, ctx)  # noqa: E731
        try:
            attempt = self._call(handler, target, ctx, heartbeat, budget, remaining_ms)
        except HandlerStillRunning:
            logger.error(
                "handler ignored its cancellation past the Lambda's time: nothing recorded, lease held while it runs",
                extra={"attempt": run.attempts, "type": target.type},
            )
            metrics.add_metric(name="HandlersOverrunning", unit="Count", value=1)
            # The heartbeat holds what admitted it with the lease while it runs; that ends with it. Its secrets stay
            # hidden from what it may still log.
            held.keep_until_lease_ends()
            secrets.keep_hidden()
            return Outcome.BUSY
        if segment.yields_on_its_own(attempt.error, ctx.checkpoints.saves, heartbeat.cancel_requested):
            attempt = Attempt(value=Yielded())
        elif segment.by_run_total and attempt.error is not None:
            attempt = replace(attempt, permanent=True)  # no time left for another attempt
        duration_ms = to_ms(self.clock.now()) - to_ms(started)
        metrics.add_metric(name="RunDurationMs", unit="Milliseconds", value=duration_ms)
        reports.flush()
        # Kept even when the lease was lost: these lines are this attempt's, under a key no other attempt uses.
        self._keep_log(run, ctx)
        if heartbeat.lost:
            held.lease_lost()
            return Outcome.DONE  # the run belongs to another executor now; it records the outcome
        if not self.fence.still(admitted, "record"):
            # A failover since the lease: this region may not record. The run stays RUNNING under this lease, which
            # lapses; the active region takes it over and runs it again (docs/regions.md, the possibly-twice runs).
            held.lease_lost()
            return Outcome.DONE
        return self._record(
            run, target, owner, delivery, attempt, heartbeat, held, duration_ms=duration_ms, leased_at=leased_at
        )

    def _sandboxed(
        self, job_type: JobType, target: RunTarget, context: dict[str, Any], secrets: RunSecrets, ctx: RunContext
    ) -> Any:
        """A function-isolated handler's segment, run in the job sandbox (tickwork.executor.isolation), its payload's
        secrets resolved here, in the handler's thread, as for an inline one."""
        payload = secrets.resolved(job_type, target.payload, context)
        return self.handlers.sandbox.call(job_type, payload, secrets.hidden(), ctx)

    def _context(self, run: Run, target: RunTarget, started: datetime, budget: float) -> RunContext:
        """What the handler is given besides its payload: its run, its deadline (`budget` seconds from `started`)."""
        return RunContext(
            run_id=run.id,
            job_id=target.owner_id,
            tenant=target.tenant,
            attempt=run.attempts,
            deadline=started + timedelta(seconds=max(budget, 0)),
            clock=self.clock,
            http_allowlist=self.handlers.targets.http_allowlist,
            clients=self.handlers.clients,
        )

    def _heartbeat(
        self, run: Run, target: RunTarget, owner: str, delivery: Delivery, ctx: RunContext, held: Held
    ) -> Heartbeat:
        heartbeat = Heartbeat(
            self.leases,
            self.queues,
            self.clock,
            run_id=run.id,
            owner=owner,
            delivery=delivery,
            lease_for=self.lease_for,
            cancelled=ctx.cancelled,
            held=held,
            faults=self.faults,
            # A newer run may ask it to stop at any time: it looks sooner than its lease extensions would tell it.
            cancel_poll=timedelta(seconds=CANCEL_POLL_SECONDS)
            if target.overlap is OverlapPolicy.CANCEL_OTHER
            else None,
        )
        ctx.on_tick = heartbeat.maybe_beat
        return heartbeat

    def _call(
        self,
        handler: Callable[[], Any],
        target: RunTarget,
        ctx: RunContext,
        heartbeat: Heartbeat,
        budget: float,
        remaining_ms: Callable[[], int],
    ) -> Attempt:
        """Call the handler under the lease: what it returned, or how it failed (HandlerStillRunning: it outlived
        the Lambda's time)."""
        if budget <= 0:
            heartbeat.stop()
            return Attempt(error=RunError(type="RunTimeout", message="not enough Lambda time left to start the run"))
        try:
            value = call_under_lease(
                handler,
                budget,
                ctx,
                heartbeat,
                seconds_left=lambda: remaining_ms() / 1000 - self.margins.recording,
            )
        except HandlerStillRunning:
            raise
        except Exception as exc:
            wait_at_least_seconds = 0.0
            if isinstance(exc, EffectMayContinue):
                wait_at_least_seconds = exc.busy_seconds
            elif isinstance(exc, RetryNotBefore):
                # The other side's own wait, but never past the job's longest backoff.
                wait_at_least_seconds = wait_within_cap(target.retry, exc.wait_seconds)
            return Attempt(
                error=RunError(
                    type=type(exc).__name__, message=secret_mask.text(str(exc))[:2000] or type(exc).__name__
                ),
                permanent=isinstance(exc, PermanentJobError),
                wait_at_least_seconds=wait_at_least_seconds,
            )
        return Attempt(value=value)

    def _record(
        self,
        run: Run,
        target: RunTarget,
        owner: str,
        delivery: Delivery,
        attempt: Attempt,
        heartbeat: Heartbeat,
        held: Held,
        *,
        duration_ms: int,
        leased_at: datetime,
    ) -> Outcome:
        """How the attempt ended, recorded by this executor, which still holds the lease (a yield carries what
        admitted the run to its next segment: `held`)."""
        error = attempt.error
        past_deadline = stopped_by_deadline(run, target, self.clock.now())
        if error is not None and heartbeat.cancel_requested and past_deadline is not None:
            # The tick asked it to stop at its deadline (on_miss CANCEL): failed `deadline`, not retried.
            return self.outcomes.fail(run, target, owner, past_deadline, duration_ms=duration_ms, started=leased_at)
        if error is not None and heartbeat.cancel_requested:
            # Its workflow run was cancelled, or a newer run of its job asked (overlap CANCEL_OTHER), and the
            # handler stopped: cancelled, not failed (no retry). A handler that returned a value anyway
            # succeeded (its effect happened).
            if target.overlap is OverlapPolicy.CANCEL_OTHER:
                metrics.add_metric(name="RunsCancelledByOverlap", unit="Count", value=1)
            return self.outcomes.skip(run, target, owner, SkipReason.CANCELLED, started=leased_at)
        if error is not None and heartbeat.hold_lost is not None:
            # Stopped because another run holds what admitted it: retried (admitted afresh) or failed as any
            # attempt that ended early.
            lost = f"stopped: {heartbeat.hold_lost} lapsed (no heartbeat got through for a lease)"
            error = RunError(type="SlotLost", message=f"{lost} and another run took it")
        elif heartbeat.hold_lost is not None:
            logger.warning("the handler returned after its slot was lost: its result is recorded")
        if isinstance(attempt.value, Yielded) and error is None:
            return self.yields.segment_ended(run, target, owner, held, duration_ms=duration_ms, started=leased_at)
        if error is None:
            try:
                result, written = self.results.write_once(run, secret_mask.value(attempt.value))
            except (TypeError, ValueError) as exc:
                error = RunError(type="UnserializableResult", message=str(exc)[:2000])
                return self.outcomes.fail(run, target, owner, error, started=leased_at)
            self.faults.reached(CrashPoint.EXECUTOR_AFTER_RESULT_WRITE)
            if not written:
                logger.warning("result existed already; the first write stands")
            return self.outcomes.succeed(run, target, owner, result, duration_ms=duration_ms, started=leased_at)
        if not attempt.permanent and run.attempts < target.retry.max_attempts:
            if run.segments > 0:
                # A yielded run that retries has not ended: it keeps what it keeps between segments through its
                # backoff (at most the longest one, or the wait its handler asked for).
                self._carry(held, max(target.retry.max_backoff_seconds, attempt.wait_at_least_seconds))
            return self.outcomes.retry(
                run,
                target,
                owner,
                error,
                delivery,
                duration_ms=duration_ms,
                at_least=attempt.wait_at_least_seconds,
                started=leased_at,
            )
        return self.outcomes.fail(run, target, owner, error, duration_ms=duration_ms, started=leased_at)

    def _keep_log(self, run: Run, ctx: RunContext) -> None:
        """Write what the attempt logged, once (If-None-Match), beside the result; an attempt that logged nothing
        writes nothing. A failed write loses the lines (they are still in the function's log), never the
        outcome."""
        if ctx.logger.empty:
            return
        try:
            self.results.write_logs_once(run, ctx.logger.document(run.requeues))
        except Exception:
            logger.exception("the run's log could not be written; its lines are in the function's log only")
            metrics.add_metric(name="RunLogWriteFailures", unit="Count", value=1)
