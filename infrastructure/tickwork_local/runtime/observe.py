"""The local runtime's own log: one readable line per run outcome, and one per tick that did something.

The lines come from watching the domain's calls in-process (a run's outcome is recorded with
`RunLeases.finish_run`, its result written with `ResultStore.write_once`), so they cost no AWS call but one
read of a job no claim showed (a triggered run's): every line names its job, or its workflow step. The handlers' own structured logs (Powertools JSON) go to stderr,
at --log-level.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any, TextIO

from tickwork.model.job import Job
from tickwork.model.run import Run, RunError, RunResult
from tickwork.model.states import RunStatus, SkipReason
from tickwork.store import Finished

PREVIEW_CHARS = 80
_JOB_NAMES = 4096


def _clock(instant: datetime | None) -> str:
    if instant is None:
        return "--:--:--.---"
    return instant.astimezone(UTC).strftime("%H:%M:%S.%f")[:-3]


def _preview(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 3] + "..."


class RunLog:
    """Formats and prints the runtime's lines (thread-safe; one write per line)."""

    def __init__(self, out: TextIO | None = None, *, node: str = "") -> None:
        self.out = out or sys.stdout
        self.node = node
        self._lock = threading.Lock()
        self._names: OrderedDict[str, str] = OrderedDict()
        self._results: OrderedDict[str, Any] = OrderedDict()  # run id -> result, until its outcome is recorded

    def line(self, text: str) -> None:
        with self._lock:
            self.out.write(text + "\n")
            self.out.flush()

    # ------------------------------------------------------------ what the store and result store report

    def saw_job(self, job: Job) -> None:
        with self._lock:
            self._names[job.id] = job.name
            self._names.move_to_end(job.id)
            while len(self._names) > _JOB_NAMES:
                self._names.popitem(last=False)

    def result_written(self, run: Run, document: Any) -> None:
        with self._lock:
            self._results[run.id] = document
            while len(self._results) > _JOB_NAMES:  # outcomes never recorded (a lease lost): forget them
                self._results.popitem(last=False)

    def knows(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._names

    def run_finished(self, run: Run, *, now: datetime, **outcome: Any) -> None:
        """`outcome`: what `RunLeases.finish_run` recorded (status, result, error, ...), as it was given."""
        with self._lock:
            name = self._names.get(run.job_id)
            document = self._results.pop(run.id, None)
        if run.step_id is not None:
            name = f"step {run.step_id} of {run.workflow_run_id}"
        self.line(format_run_line(run, finished=now, name=name, document=document, node=self.node, **outcome))


def format_run_line(
    run: Run,
    *,
    status: RunStatus,
    finished: datetime,
    name: str | None = None,
    result: RunResult | None = None,
    document: Any = None,
    error: RunError | None = None,
    skip_reason: SkipReason | None = None,
    duration_ms: int | None = None,
    node: str = "",
    **_: Any,  # the rest of what a run's outcome records (the lease owner, retry times): not shown
) -> str:
    """`12:00:05.412 run SUCCEEDED  nightly (j0...3.1795262405000) scheduled 12:00:05.000 -> started
    12:00:05.412, late 412 ms, attempt 1, 12 ms: result {"n":3}`"""
    who = f"{name} ({run.id})" if name else run.id
    parts = [f"{_clock(finished)}{f' [{node}]' if node else ''} run {status.value:<9} {who}"]
    timing = f"scheduled {_clock(run.scheduled_for)} -> started {_clock(run.started_at)}"
    if run.lateness_ms is not None:
        timing += f", late {run.lateness_ms} ms"
    if run.attempts:
        timing += f", attempt {run.attempts}"
    if duration_ms is not None:
        timing += f", {duration_ms} ms"
    parts.append(timing)
    if status is RunStatus.SUCCEEDED:
        if document is not None:
            outcome = f"result {_preview(document)}"
        elif result is not None:
            outcome = f"result {result.bytes} B at {result.location}"
        else:
            outcome = "result recorded"
    elif status is RunStatus.SKIPPED:
        outcome = f"skipped: {skip_reason.value if skip_reason else 'unknown reason'}"
    elif error is not None:
        message = error.message if len(error.message) <= PREVIEW_CHARS else error.message[: PREVIEW_CHARS - 3] + "..."
        outcome = f"error {error.type}: {message}"
        outcome += "; will retry" if status is RunStatus.RETRYING else "; no attempts left, on the DLQ"
    else:
        outcome = status.value.lower()
    return f"{parts[0]} {parts[1]}: {outcome}"


def format_tick_line(
    instant: datetime, result: Any, error: BaseException | None, seconds: float, node: str = ""
) -> str | None:
    """A line for a tick that dispatched, skipped or re-sent something, or failed; None for a quiet tick."""
    prefix = f"{_clock(instant)}{f' [{node}]' if node else ''} tick"
    if error is not None:
        return f"{prefix} FAILED after {seconds * 1000:.0f} ms: {type(error).__name__}: {error} (the next tick runs as planned)"
    if not isinstance(result, dict):
        return None
    counts = {
        k: int(result.get(k) or 0) for k in ("dispatched", "redispatched", "skipped", "lost_races", "over_capacity")
    }
    if not any(counts.values()):
        return None
    said = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items() if v)
    return f"{prefix} {said} ({seconds * 1000:.0f} ms)"


class _Observed:
    """Passes everything through to the wrapped store; subclasses tell the run log what it records."""

    def __init__(self, inner: Any, runlog: RunLog) -> None:
        self._inner = inner
        self._runlog = runlog

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ObservedJobs(_Observed):
    """A JobRecords whose reads and advances tell the run log the job's name; everything else passes through."""

    def get_job(self, *args: Any, **kwargs: Any) -> Any:
        job = self._inner.get_job(*args, **kwargs)
        if job is not None:
            self._runlog.saw_job(job)
        return job

    def advance_job(self, *args: Any, **kwargs: Any) -> Any:
        # A claimed run's executor reads its job only when the message's copy is stale (tickwork.model.run_spec), so
        # the claim's own view of the job is where a node learns the name for its run lines.
        advanced = self._inner.advance_job(*args, **kwargs)
        if advanced is not None and advanced.job is not None:
            self._runlog.saw_job(advanced.job)
        return advanced


class ObservedLeases(_Observed):
    """A RunLeases that tells the run log each outcome it records; everything else passes through."""

    def __init__(self, inner: Any, jobs: ObservedJobs, runlog: RunLog) -> None:
        super().__init__(inner, runlog)
        self._jobs = jobs

    def finish_run(self, run: Run, **kwargs: Any) -> Finished:
        finished: Finished = self._inner.finish_run(run, **kwargs)
        if finished.recorded:
            if run.step_id is None and not self._runlog.knows(run.job_id):
                self._learn_name(run.job_id)
            self._runlog.run_finished(run, **kwargs)
        return finished

    def _learn_name(self, job_id: str) -> None:
        """A triggered or backfilled run had no claim to name its job, and its executor may not have read it:
        read it once (then remembered), so that every line names its job."""
        try:
            self._jobs.get_job(job_id, consistent=False)
        except Exception:  # the line is for people: a failed read leaves the outcome recorded, unnamed
            return


class ObservedStore(_Observed):
    """A JobStore whose `jobs` and `leases` tell the run log what they record; the wiring hands these on. With
    `outcomes` False (the functions that claim but run nothing: the API, the tick, the dispatch workers), only the
    jobs' names: a run claimed there is named in its executor's line without a read of its job."""

    def __init__(self, inner: Any, runlog: RunLog, *, outcomes: bool = True) -> None:
        super().__init__(inner, runlog)
        self.jobs = ObservedJobs(inner.jobs, runlog)
        if outcomes:
            self.leases = ObservedLeases(inner.leases, self.jobs, runlog)


class ObservedResults(_Observed):
    """A ResultStore that hands the run log each result it writes, for the line's preview."""

    def write_once(self, run: Run, document: Any) -> Any:
        outcome = self._inner.write_once(run, document)
        self._runlog.result_written(run, document)
        return outcome
