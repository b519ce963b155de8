"""A job's completion: ACTIVE -> COMPLETED once it has no next occurrence and every run of its occurrences
(scheduled or backfilled; a manual trigger's is not one) has settled.

Who attempts it: the run of the job's last occurrence when it settles (tickwork.executor.outcomes), and the claim that
advances the job past its last occurrence when that is a skip record or had settled already (tickwork.tick.claimer).
Either asks for the job's unsettled runs: one consistent Query, made only once the job has no next occurrence.
None: the job completes. A run that was the job's only run of an occurrence when claimed (a one-shot's: its
claim's advance counts them, store.jobs.OCCURRENCE_RUNS, and its message's copy of the job says so) asks nothing:
its completion's write holds only while the count is still 1 (a backfill counts its runs before it makes them),
and only if that fails does it look. Otherwise one of them is asked to carry the attempt on, by a conditional write that holds
only while that run is unsettled; its terminal outcome's write takes the ask away and tells it (RunRecords.
finish_run), and it attempts the completion in turn. An ask that finds its run settled is answered by the next
run in the list, and when every run found has settled the job completes. So the last run of the job to settle, or
someone after it, sees every run settled, and nobody sees that earlier.

Why not a count of unsettled runs on the job: the claim's advance adds to it at no cost (and does: how many runs
it ever queued), but every run's outcome would then write the job once more to take one off (a request on every
run, where this costs one Query on a job's last, and none on a one-shot's), and an executor dying between its
outcome and that write would leave the job ACTIVE for ever.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tickwork.observability import logger
from tickwork.store import JobRecords, RunRecords


class JobCompletion:
    def __init__(self, jobs: JobRecords, runs: RunRecords) -> None:
        self.jobs, self.runs = jobs, runs

    def attempt(self, job_id: str, now: datetime, *, alone: bool = False) -> bool:
        """Complete the job if every run of its occurrences has settled, else hand the attempt on to one that
        has not; True if it completed here. `alone`: the settled run was the job's only run of an occurrence
        (JobRunSpec.only_occurrence), so there is no other to look for."""
        if alone and self.jobs.complete_if_settled(job_id, now, alone=True):
            logger.info("job completed: its only run of an occurrence has settled", extra={"job_id": job_id})
            return True
        return self.complete_or_hand_on(job_id, self.runs.open_occurrence_runs(job_id), now)

    def complete_or_hand_on(self, job_id: str, open_runs: Sequence[str], now: datetime) -> bool:
        """`open_runs`: the job's unsettled runs as read after the job had no next occurrence, or before the write
        that left it none (runs settled then need no ask). The first still unsettled carries the attempt on."""
        for run_id in open_runs:
            if self.runs.ask_to_complete_job(run_id):
                logger.info(
                    "job not completed yet: a run of an earlier occurrence has not settled",
                    extra={"job_id": job_id, "run_id": run_id},
                )
                return False
        if self.jobs.complete_if_settled(job_id, now):
            logger.info("job completed: every run of its occurrences has settled", extra={"job_id": job_id})
            return True
        return False
