"""A run's progress reports (`ctx.progress`), coalesced: at most one write of their own every PROGRESS_EVERY, the
rest riding on the heartbeat's lease extension, the last one written when the handler ends.

The first report of an attempt is written at once (a run shows it has started to move); a later one within
PROGRESS_EVERY of the last write waits as `pending`, and the next heartbeat carries it (no request of its own), or,
if none comes first, the next report past PROGRESS_EVERY, or the end of the handler. Each write is the lease
holder's (`lease_owner = :me`): a report from an attempt that lost the run changes nothing. A failed write never
fails the run: progress is for watching, not for resuming (that is the checkpoint's job).
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import Clock, iso
from tickwork.observability import logger, secret_mask
from tickwork.store import RunLeases

PROGRESS_EVERY = timedelta(seconds=5)


class ProgressReports:
    """One attempt's progress sink (tickwork.jobtypes.durable.ProgressSink). Thread-safe."""

    def __init__(self, leases: RunLeases, clock: Clock, *, run_id: str, owner: str) -> None:
        self.leases, self.clock = leases, clock
        self.run_id, self.owner = run_id, owner
        self.writes = 0  # of its own (the heartbeat's carry none)
        self._pending: str | None = None
        self._last_write: datetime | None = None
        self._lock = threading.Lock()

    def report(self, progress: dict[str, Any]) -> None:
        with self._lock:
            now = self.clock.now()
            masked = secret_mask.value(progress)  # a run's secrets are never written
            text = json.dumps({**masked, "updated_at": iso(now)}, separators=(",", ":"))
            if self._last_write is not None and now - self._last_write < PROGRESS_EVERY:
                self._pending = text
                return
            self._pending, self._last_write = None, now
        self._write(text)

    def take_pending(self) -> str | None:
        """The report waiting for a write, handed to the heartbeat's (which writes it with the lease's extension)."""
        with self._lock:
            text, self._pending = self._pending, None
            if text is not None:
                self._last_write = self.clock.now()
            return text

    def flush(self) -> None:
        """The handler has ended: a report still waiting is written now."""
        text = self.take_pending()
        if text is not None:
            self._write(text)

    def _write(self, text: str) -> None:
        try:
            self.leases.report_progress(self.run_id, owner=self.owner, progress=text)
            self.writes += 1
        except Exception:  # called from the handler's thread: a failed report must not fail the run
            logger.exception("progress report not written", extra={"run_id": self.run_id})
