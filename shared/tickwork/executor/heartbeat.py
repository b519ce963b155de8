"""Holding a run's lease while its handler runs: the heartbeat, and the handler's thread under it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime, timedelta
from typing import Any

from tickwork.aws.queues import RunQueues
from tickwork.executor.admission import Held
from tickwork.executor.delivery import Delivery, visibility_for
from tickwork.executor.live_logs import LiveLog
from tickwork.executor.progress_reports import ProgressReports
from tickwork.executor.run_warnings import RunWatch
from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.jobtypes import EffectMayContinue, PermanentJobError, RetryNotBefore, RunContext, RunTimeout
from tickwork.model.clock import Clock
from tickwork.observability import logger
from tickwork.store import RunLeases


class Heartbeat:
    """Extends the lease, with everything that admitted the run (tickwork.executor.admission: the job's running slot
    under an overlap policy other than ALLOW, the run's concurrency slots), and the message's visibility while a run
    works. It beats for as long as the handler runs,
    even past the executor's own wait: it stops when the handler returns (or when told to, before the handler
    starts).

    A beat that comes later than a lease (a starved process, throttled beats) may find a slot lapsed and taken
    by another run, though its lease is still its own (nobody took the run over). What admitted the run is gone,
    so the run is stopped as at its timeout (`hold_lost` says which; the executor records it). It does not take
    the slot back, even if free again: the other run was let in beside it, and a slot taken back would jump the
    runs waiting for it (BUFFER_ONE's waiter, CANCEL_OTHER's newer run, a key's deferred runs). A lapsed slot
    nobody took runs on, as a lapsed lease nobody took does."""

    def __init__(
        self,
        leases: RunLeases,
        queues: RunQueues,
        clock: Clock,
        *,
        run_id: str,
        owner: str,
        delivery: Delivery,
        lease_for: timedelta,
        cancelled: threading.Event,
        held: Held | None = None,
        faults: FaultPlan = NO_FAULTS,
        cancel_poll: timedelta | None = None,
    ) -> None:
        self.leases, self.queues, self.clock = leases, queues, clock
        self.run_id, self.owner, self.delivery = run_id, owner, delivery
        self.lease_for = lease_for
        self.every = lease_for / 3
        self.cancelled = cancelled
        self.held = held if held is not None else Held()
        self.faults = faults
        # Between beats, how often to read whether the run was asked to stop (None: only at each beat).
        self.cancel_poll = cancel_poll
        self.lost = False
        self.cancel_requested = False  # the run was asked to stop (seen on the lease extension's answer)
        self.hold_lost: str | None = None  # what admitted the run and another run took (see above)
        self.beats = 0
        self.progress: ProgressReports | None = None  # its pending report rides on each beat
        self.live_log: LiveLog | None = None  # flushed at each beat (tickwork.executor.live_logs)
        self.watch: RunWatch | None = None  # its warnings' marks ride on a beat (tickwork.executor.run_warnings)
        self._next = clock.now() + self.every
        self._next_poll = clock.now() + cancel_poll if cancel_poll is not None else None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def maybe_beat(self) -> None:
        with self._lock:
            now = self.clock.now()
            if self.lost:
                return
            if now < self._next:
                self._poll_cancel(now)
                return
            self._next = now + self.every
            lease_until = now + self.lease_for
            progress = self.progress.take_pending() if self.progress is not None else None
            marks = self.watch.marks(now) if self.watch is not None else {}
            extension = self.leases.extend_lease(
                self.run_id, owner=self.owner, lease_until=lease_until, progress=progress, marks=marks
            )
            if not extension.held:
                self.lost = True
                self.cancelled.set()
                logger.error("lease lost: another executor took the run", extra={"run_id": self.run_id})
                return
            if marks and self.watch is not None:
                self.watch.marked(marks)
            if extension.cancel_requested:
                # Its workflow run was cancelled, or a newer run of its job (overlap CANCEL_OTHER) asked: the
                # handler is asked to stop, as at its timeout.
                self._cancel()
            self.faults.reached(CrashPoint.EXECUTOR_DURING_HEARTBEAT)
            # What admitted it ends with the lease: a long run keeps it, a dead one frees it.
            for lost in self.held.extend(lease_until):
                self._lose_hold(lost)
            self.beats += 1
            # Visibility follows the lease: were this executor to die, the message returns when the lease ends.
            self.queues.change_visibility(
                self.delivery.queue_url, self.delivery.receipt_handle, visibility_for(self.lease_for)
            )
            if self.live_log is not None:
                self.live_log.flush()

    def lease_lost(self) -> None:
        """Another of the lease holder's writes (a checkpoint's) found the lease gone: as a beat that did."""
        with self._lock:
            self.lost = True
        self.cancelled.set()

    def _lose_hold(self, slot: str) -> None:
        if self.hold_lost is not None:
            return
        self.hold_lost = slot
        self.cancelled.set()
        logger.error(
            "slot lost: it lapsed before a heartbeat got through and another run took it; the handler is cancelled",
            extra={"run_id": self.run_id, "slot": slot},
        )

    def _poll_cancel(self, now: datetime) -> None:
        if self._next_poll is None or self.cancel_poll is None or now < self._next_poll or self.cancel_requested:
            return
        self._next_poll = now + self.cancel_poll
        try:
            requested = self.leases.cancel_requested(self.run_id)
        except Exception:  # called from the handler's own thread too: a failed look must not fail the run
            logger.exception("could not read whether the run was asked to stop", extra={"run_id": self.run_id})
            return
        if requested:
            self._cancel()

    def _cancel(self) -> None:
        if self.cancel_requested:
            return
        self.cancel_requested = True
        self.cancelled.set()
        logger.warning("run asked to stop: its handler is cancelled", extra={"run_id": self.run_id})

    def start(self) -> None:
        """A background beat for handlers that block without calling ctx.sleep (real time). Idempotent."""
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return

            def loop() -> None:
                interval = min(self.every, self.cancel_poll) if self.cancel_poll is not None else self.every
                while not self._stop.wait(interval.total_seconds()):
                    try:
                        self.maybe_beat()
                    except Exception:  # a failed beat is retried at the next; the lease still has a margin
                        logger.exception("heartbeat failed", extra={"run_id": self.run_id})

            self._thread = threading.Thread(target=loop, name=f"heartbeat-{self.run_id}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()


class HandlerStillRunning(Exception):
    """The handler ignored its cancellation until the Lambda's own time ran out: its outcome is unknown, so
    nothing is recorded; the lease stays held (beating) until it returns or the process dies."""


def call_under_lease(
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
        if late is not None and not isinstance(
            late, RunTimeout | EffectMayContinue | PermanentJobError | RetryNotBefore
        ):
            raise RunTimeout(f"run exceeded its timeout of {budget:.0f}s and then failed: {late}") from late
    return future.result()
