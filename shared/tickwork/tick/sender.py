"""Sending claimed runs to their band queues, each delayed so that it starts on time and never before."""

from __future__ import annotations

from datetime import datetime

from tickwork.aws.queues import Outgoing, RunQueues, SendReport
from tickwork.faults import CrashPoint, FaultPlan
from tickwork.model.clock import Clock, to_ms
from tickwork.model.run import Run
from tickwork.observability import logger, metrics


def outgoing_for(run: Run, *, start_at: datetime | None = None) -> Outgoing:
    """A run's message to its band queue; it may start at `start_at`, or else at its scheduled time."""
    return Outgoing.for_run(run, start_at=start_at)


# ---------------------------------------------------------------- sending


class RunSender:
    """Sends runs to their band queues, each delayed until it may start."""

    def __init__(self, queues: RunQueues, clock: Clock, faults: FaultPlan) -> None:
        self.queues = queues
        self.clock = clock
        self.faults = faults

    def send(self, outgoing: list[Outgoing]) -> SendReport:
        """Send to the band queues; what SQS refuses is reported (it stays in the due index for a re-send)."""
        if not outgoing:
            return SendReport()
        # The delay is computed at the last moment, so time spent claiming never makes a run early.
        now = self.clock.now()
        timed = [o.timed(now) for o in outgoing]
        self.faults.reached(CrashPoint.TICK_BEFORE_SEND)
        sent = self.queues.send(timed)
        self.faults.reached(CrashPoint.TICK_AFTER_SEND)
        if sent.failed:
            # They stay in the due index: the next tick re-sends them after redispatch_after.
            logger.error("SQS refused some messages", extra={"run_ids": sent.failed})
        if sent.sent:
            metrics.add_metric(name="RunsDispatched", unit="Count", value=len(sent.sent))
            lag = [max(0, to_ms(now) - to_ms(o.message.scheduled_for)) for o in timed]
            metrics.add_metric(name="DispatchLagMs", unit="Milliseconds", value=max(lag))
        return sent
