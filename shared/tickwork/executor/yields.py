"""Graceful yields (docs/durable-runs.md): a segment's budget, and a segment that ends in a yield recorded.

A segment's handler time is bounded three ways: the job's `timeout_seconds`, the Lambda's time left (less the
margin for recording the outcome), and what is left of the job's `max_run_seconds` after the run's earlier
segments. `ctx.should_yield()` turns true the yield margin before the Lambda's bound. Both margins follow the
executor Lambda's timeout (LambdaMargins.for_timeout). A handler that
returns `ctx.yield_run()` yields; so does one the executor stopped at the Lambda's bound (cooperatively, as at a
timeout) that saved a checkpoint in this segment. A yield is one conditional write (the lease holder's: the run back
to its queue state, the attempt not consumed) and one fresh message to start the next segment now, which a new
receive count goes with. A run past max_run_seconds fails, without retries.

A yielded run has not ended: it keeps its job's running slot and its ordering key's turn between its segments
(Held.carry; its concurrency slots it gives back: it runs nothing meanwhile), and its next segment takes them as
their holder's. It keeps the slot until the tick would re-send its next segment, and a lease more (`kept_until`),
so that one ended without an executor (a freeze's skip, say) frees it by itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from tickwork.aws.queues import Outgoing, RunQueues
from tickwork.executor.admission import Held
from tickwork.executor.delivery import Outcome
from tickwork.executor.outcomes import RunOutcomes, attempt_record, history_after
from tickwork.model.clock import Clock
from tickwork.model.run import Run, RunError
from tickwork.model.run_target import RunTarget
from tickwork.model.states import AttemptOutcome
from tickwork.observability import logger, metrics
from tickwork.store import RunLeases


@dataclass(frozen=True)
class LambdaMargins:
    """What a segment leaves of the executor Lambda's time: `recording` seconds at its end for writing the outcome
    (the handler is stopped there), and `yielding` seconds before that, when `ctx.should_yield()` turns true (time
    for one more checkpoint and the yield). The defaults are those of the 900 s Lambda."""

    recording: float = 15
    yielding: float = 30

    @classmethod
    def for_timeout(cls, lambda_timeout_seconds: float) -> LambdaMargins:
        """The margins of a Lambda of this timeout: a tenth and a fifth of it, at most the defaults (so every
        timeout from 150 s up has the 900 s Lambda's), and a short Lambda still leaves most of its time to the
        handler (10 s: 1 s and 2 s)."""
        default = cls()
        return cls(
            recording=min(default.recording, lambda_timeout_seconds / 10),
            yielding=min(default.yielding, lambda_timeout_seconds / 5),
        )


THE_900_SECOND_LAMBDAS = LambdaMargins()


@dataclass(frozen=True)
class SegmentBudget:
    seconds: float  # the handler's time in this segment
    by_lambda: bool  # the Lambda's time is the bound: a handler stopped at it may be yielded
    by_run_total: bool  # what is left of max_run_seconds is the bound: a handler stopped at it fails for good
    yield_after: float  # seconds from the start until should_yield()

    def yields_on_its_own(self, error: RunError | None, checkpoints_saved: int, cancel_requested: bool) -> bool:
        """A handler stopped at the Lambda's bound that saved a checkpoint in this segment is yielded, not failed:
        the next segment goes on from that checkpoint."""
        timed_out = error is not None and error.type == "RunTimeout"
        return timed_out and self.by_lambda and checkpoints_saved > 0 and not cancel_requested


def segment_budget(
    timeout_seconds: float, lambda_left: float, run_left: float, *, yield_margin: float = LambdaMargins.yielding
) -> SegmentBudget:
    """The bounds of a segment (seconds): the job's timeout, the Lambda's time left (less the margin for recording
    the outcome), and what is left of the job's max_run_seconds; should_yield() `yield_margin` before the Lambda's."""
    seconds = min(timeout_seconds, lambda_left, run_left)
    return SegmentBudget(
        seconds=seconds,
        by_lambda=lambda_left < timeout_seconds and lambda_left <= run_left,
        by_run_total=run_left < timeout_seconds and run_left < lambda_left,
        yield_after=max(lambda_left - yield_margin, 0),
    )


def kept_until(resend_at: datetime, lease_for: timedelta) -> datetime:
    """Until when a run between segments keeps what admitted it (its job's running slot): the tick's re-send of its
    next segment at `resend_at` (were its message lost), and a lease more for that segment to start and extend it.
    A run that ends between segments gives it back at once."""
    return resend_at + lease_for


class RunYields:
    """Recording a segment that yielded."""

    def __init__(
        self, leases: RunLeases, queues: RunQueues, clock: Clock, outcomes: RunOutcomes, *, lease_for: timedelta
    ) -> None:
        self.leases, self.queues, self.clock, self.outcomes = leases, queues, clock, outcomes
        self.lease_for = lease_for

    def segment_ended(
        self, run: Run, target: RunTarget, owner: str, held: Held, *, duration_ms: int, started: datetime | None
    ) -> Outcome:
        now = self.clock.now()
        if run.yielded_ms + duration_ms >= target.max_run_seconds * 1000:
            error = RunError(
                type="RunTimeout",
                message=f"run exceeded its max_run_seconds of {target.max_run_seconds} over {run.segments + 1} segments",
            )
            return self.outcomes.fail(run, target, owner, error, duration_ms=duration_ms, started=started)
        record = attempt_record(run, started, now, AttemptOutcome.YIELDED)
        resend_at = now + self.outcomes.retry_safety_net
        # Carried before the yield's write: whatever happens after it, the next occurrence does not start beside it.
        held.carry(kept_until(resend_at, self.lease_for))
        if not self.leases.yield_run(
            run,
            owner=owner,
            segment_ms=duration_ms,
            resend_at=resend_at,
            history=history_after(run, record),
            variant=target.variant,
        ):
            return Outcome.DONE  # the lease was taken over: its new holder goes on
        metrics.add_metric(name="RunsYielded", unit="Count", value=1)
        logger.info("run yielded: it goes on in a fresh invocation", extra={"segments": run.segments + 1})
        # A fresh message, so that the segments do not add up to the queue's receive count; were it lost, the due
        # index re-sends the run at resend_at.
        self.queues.send([Outgoing.for_run(run, start_at=now).timed(now)])
        return Outcome.DONE
