"""Invoke the tick function as an EventBridge scheduled rule does: once at start, then every period,
aligned to the wall clock (a 60 s period fires at :00 of every minute). A tick that throws is logged and the
next one still runs. Ticks on one node never overlap: a tick that outlasts the period skips the slots it
missed, and the next fires at the next aligned slot."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("tickwork_local.runtime.ticker")


def next_slot(now: float, period: float) -> float:
    """The first wall-clock instant after `now` that is a whole multiple of `period` (epoch seconds)."""
    return (math.floor(now / period) + 1) * period


class Ticker:
    def __init__(
        self,
        invoke: Callable[[dict[str, Any]], Any],
        *,
        period_seconds: float,
        event_for: Callable[[datetime], dict[str, Any]],
        on_result: Callable[[datetime, Any, BaseException | None, float], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if period_seconds <= 0:
            raise ValueError("period_seconds must be positive")
        self.invoke = invoke
        self.period = period_seconds
        self.event_for = event_for
        self.on_result = on_result
        self.clock = clock
        self.ticks = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="tick", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> bool:
        """Wait for a tick in progress to finish; False if it is still running at the deadline."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def tick_once(self, instant: datetime | None = None) -> None:
        """One invocation; never raises (a failed tick is reported, and the schedule goes on)."""
        at = instant or datetime.fromtimestamp(self.clock(), tz=UTC)
        started = time.monotonic()
        error: BaseException | None = None
        result: Any = None
        try:
            result = self.invoke(self.event_for(at))
        except Exception as exc:
            error = exc
            self.failures += 1
            log.error("tick failed: %s: %s", type(exc).__name__, exc, exc_info=exc)
        finally:
            self.ticks += 1
        if self.on_result is not None:
            try:
                self.on_result(at, result, error, time.monotonic() - started)
            except Exception:
                log.exception("tick report failed")

    def _loop(self) -> None:
        self.tick_once()
        while not self._stop.is_set():
            slot = next_slot(self.clock(), self.period)
            if self._stop.wait(max(0.0, slot - self.clock())):
                return
            self.tick_once(datetime.fromtimestamp(slot, tz=UTC))
