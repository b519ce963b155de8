"""A running attempt's log lines, readable while it runs: flushed to S3 with each heartbeat that finds new lines
(tickwork.aws.results.live_logs_key), so that `GET /v1/runs/{id}/logs` shows them, and so that what was flushed
survives the executor's death. The attempt's own log, written once when its handler ends (RunExecutor._keep_log),
then stands in for its flushes. A flush costs one PutObject, only at a beat (every lease/3) with new lines: a job
that logs nothing, or finishes within one beat, pays none.
"""

from __future__ import annotations

from tickwork.aws.results import ResultStore
from tickwork.jobtypes.run_log import RunLog
from tickwork.model.run import Run
from tickwork.observability import logger, metrics


class LiveLog:
    """One attempt's flushes."""

    def __init__(self, results: ResultStore, run: Run, log: RunLog) -> None:
        self.results, self.run, self.log = results, run, log
        self.flushed = 0  # lines logged as of the last flush

    def flush(self) -> None:
        """Write the lines logged so far if there are new ones; a failed write is tried again at the next beat."""
        logged = self.log.logged
        if logged == self.flushed:
            return
        try:
            self.results.write_live_logs(self.run, {**self.log.document(self.run.requeues), "live": True})
        except Exception:
            logger.exception("the run's log lines could not be flushed", extra={"run_id": self.run.id})
            metrics.add_metric(name="RunLogWriteFailures", unit="Count", value=1)
            return
        self.flushed = logged
