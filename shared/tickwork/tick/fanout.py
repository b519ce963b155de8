"""Dispatcher fan-out: the minute tick hands disjoint slices of the due index's shards to W dispatch workers.

One tick claims about 7,500 runs a minute (docs/scale.md: the client's CPU per claim, under the GIL); 100M runs a
day need ~47 workers in the peak minute. With `DispatchWorkers` W > 1, the minute rule's invocation is the
coordinator: it sends W `DispatchSlice` messages to the dispatch queue (one SendMessageBatch per 10), and each
worker (DispatchFunction, an SQS event source with batch size 1) runs the ordinary `claim_due_runs` over its own
shards, those with `shard % W == worker`.

Why a queue rather than W asynchronous invokes: a slice that fails is not retried by SQS (the dispatch queue's
maxReceiveCount is 1: it goes to TickDeadLetterQueue, whose alarm is the failed-tick alarm) and Lambda's own async
retries, up to 6 hours late, cannot bring it back stale; the event source's concurrency bounds the workers; the
local runtime already plays SQS event sources, so the fan-out runs locally as it does in AWS.

Nothing here is needed for exactly-once: a worker's claims are the same conditional writes as a single tick's,
and its shard leases make two workers given the same shard (a slow worker and the next tick's) split or skip it
rather than collide. What fan-out must not do is lose a shard: a coordinator that dies before sending a slice,
or a worker that dies in it, leaves those shards' entries in the due index, and the next tick's slices take them
again (its shard leases end within the tick period). Claims look ahead by the horizon (120 s, twice the tick), so
a run due more than a tick ahead loses nothing when one tick's slice is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.model.clock import Clock
from tickwork.model.messages import DispatchSlice
from tickwork.observability import logger, metrics


def slices_for(workers: int, shards: int, tick_at: datetime) -> list[DispatchSlice]:
    """W slices covering every shard exactly once. W beyond the shard count would hand out empty slices: capped."""
    count = max(1, min(workers, shards))
    return [DispatchSlice(tick_at=tick_at, worker=i, workers=count) for i in range(count)]


SLICES_PER_REQUEST = 10  # SQS's SendMessageBatch limit


class SliceQueue(Protocol):
    def send_slices(self, slices: Sequence[DispatchSlice]) -> int:
        """Send up to ten slices in one request; the number SQS accepted."""
        ...


class DispatchCoordinator:
    """The minute rule's invocation when the dispatch is fanned out: it claims nothing itself."""

    def __init__(
        self, queue: SliceQueue, clock: Clock, *, workers: int, shards: int, faults: FaultPlan = NO_FAULTS
    ) -> None:
        self.queue, self.clock, self.faults = queue, clock, faults
        self.workers, self.shards = workers, shards

    def hand_out(self) -> int:
        """Send this tick's slices, ten to a request; the number sent. A slice not sent (the request failed, or
        this invocation died) is taken by the next tick's."""
        slices = slices_for(self.workers, self.shards, self.clock.now())
        self.faults.reached(CrashPoint.FANOUT_BEFORE_SEND)
        sent = 0
        for start in range(0, len(slices), SLICES_PER_REQUEST):
            sent += self.queue.send_slices(slices[start : start + SLICES_PER_REQUEST])
            self.faults.reached(CrashPoint.FANOUT_AFTER_SEND)
        metrics.add_metric(name="DispatchSlicesSent", unit="Count", value=sent)
        if sent < len(slices):
            logger.warning(
                "some dispatch slices were not sent; the next tick takes their shards",
                extra={"slices": len(slices), "sent": sent},
            )
        return sent
