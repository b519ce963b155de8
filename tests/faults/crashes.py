"""A fault plan for tests: the process dies at a named crash point."""

from __future__ import annotations

import threading
from collections import Counter

from tickwork.faults import CrashPoint


class ProcessKilled(BaseException):
    """The process dying at a crash point (timeout, out of memory, SIGKILL).

    A BaseException, not an Exception, on purpose: the domain guards some steps with `except Exception` (one
    bad due item must not stop the tick; a failed heartbeat is retried at the next; the batch processor turns
    a record's exception into an item failure). A dying process gets no such second chance, so nothing in the
    domain may catch this and carry on; it propagates to the handler's caller like the end of the process.
    """


class CrashPlan:
    """Does nothing until armed; then the next `times` passes of the armed point (after `skip` passes) kill
    the process. Counts every point reached, so a test can prove its crash point was really on the path."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.point: CrashPoint | None = None
        self.skip = 0
        self.times = 0
        self.kills = 0
        self.reached_counts: Counter[CrashPoint] = Counter()

    def arm(self, point: CrashPoint, *, times: int = 1, skip: int = 0) -> None:
        with self._lock:
            self.point, self.times, self.skip, self.kills = point, times, skip, 0

    def disarm(self) -> None:
        with self._lock:
            self.point = None

    def reached(self, point: CrashPoint) -> None:
        with self._lock:
            self.reached_counts[point] += 1
            if point is not self.point or self.kills >= self.times:
                return
            if self.skip > 0:
                self.skip -= 1
                return
            self.kills += 1
        raise ProcessKilled(point.value)
