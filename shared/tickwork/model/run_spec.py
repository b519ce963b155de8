"""A claimed run's copy of its job (RunMessage.job): when the claim attaches one, and when the executor trusts it.

Why: reading the job was one of the executor's requests for every run. The claim's advance of the job, an
UpdateItem it makes anyway, returns the job as that write left it at no extra cost (ReturnValues bills no
capacity), and a copy of what the executor needs rides in the run's message (SQS bills per 64 KiB, so a small
payload rides free). The executor then reads the job only when the copy may be out of date.

Why the copy stays true:
- A change of the job (pause, resume, cancel, PATCH: tickwork.control.job_lifecycle.JobLifecycle) first marks the
  job's claimed runs that have not settled (`Run.job_changed_at`, RunRecords.mark_runs_job_changed), then writes the job
  on the version it read before; an executor reads the job for a marked run. Marking first leaves nothing untold by a
  process that dies between the two.
- A claim racing the change: the claim writes its runs, then advances the job on the version it read, and only a
  claim whose advance won sends copies. An advance after the change's read and before its write moved the
  version, so the change's write loses and it starts again (marking again); an advance after the change's write
  copied the changed job; runs written before the marking were marked.
- The copy is trusted only for a run's first attempt (QUEUED before this lease: not a retry, nor a run taken
  over from a dead executor) of its first execution (never requeued: a retry by hand or a DLQ redrive comes
  after the run was terminal, when a change of the job marks nothing, and a duplicate of the first message
  still carries the old copy), leased within SPEC_FRESH_FOR of its occurrence. The marking looks back further
  (MARK_BACK: that and room for clocks to disagree), so a run it does not look at is one whose copy nobody
  trusts any more.
- Only plain jobs carry one: ACTIVE, overlap ALLOW (the other policies keep state on the job), no circuit
  breaker (whose state changes with every failure, not only by a change a user makes), and a small payload.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from tickwork.model.ids import parse_run_id
from tickwork.model.job import Job
from tickwork.model.messages import JobRunSpec, RunMessage, run_settings
from tickwork.model.policies import OverlapPolicy
from tickwork.model.run import Run
from tickwork.model.states import JobState, RunStatus, RunTrigger

# Ten such messages to a SendMessageBatch stay well inside SQS's 1 MiB, each inside one 64 KiB billing chunk.
INLINE_SPEC_MAX_BYTES = 16 * 1024
# A run leased later than this after its occurrence (a backlog) reads its job.
SPEC_FRESH_FOR = timedelta(minutes=10)
# How far back a job's change marks its runs: SPEC_FRESH_FOR, and 10 minutes for clocks that disagree.
MARK_BACK = SPEC_FRESH_FOR + timedelta(minutes=10)


def spec_for(job: Job, *, last_occurrence: bool, only_occurrence: bool = False) -> JobRunSpec | None:
    """The copy of `job` for one of its runs, or None: this job's executors read it."""
    if job.state is not JobState.ACTIVE or job.overlap is not OverlapPolicy.ALLOW or job.circuit_breaker is not None:
        return None
    spec = JobRunSpec(**run_settings(job), last_occurrence=last_occurrence, only_occurrence=only_occurrence)
    if len(spec.model_dump_json(exclude_none=True).encode()) > INLINE_SPEC_MAX_BYTES:
        return None
    return spec


def with_specs(messages: Sequence[RunMessage], job: Job, *, occurrence_runs: int = 0) -> list[RunMessage]:
    """The messages of the runs one claim round wrote, each carrying a copy of `job` as the round's advance left
    it, where the job may have one. The job's next occurrence after the advance tells which run is its last (its
    latest, if the job has none left) without building its schedule once per run; the job's count of its
    occurrences' runs (store.jobs.OCCURRENCE_RUNS) as the advance left it, whether that run is its only one."""
    if not messages:
        return []
    latest = max(_occurrence(m.run_id) for m in messages)
    specs = {
        False: spec_for(job, last_occurrence=False),
        True: spec_for(job, last_occurrence=True, only_occurrence=occurrence_runs == 1),
    }
    out = []
    for m in messages:
        spec = specs[job.next_run_at is None and _occurrence(m.run_id) == latest]
        out.append(m if spec is None else m.model_copy(update={"job": spec}))
    return out


def _occurrence(run_id: str) -> datetime:
    parsed = parse_run_id(run_id)
    assert parsed is not None  # a message's run id was checked when it was made (RunMessage._ids_agree)
    return parsed.scheduled_for


def trusted_spec(message: RunMessage, run: Run, previous: RunStatus | None, now: datetime) -> JobRunSpec | None:
    """The message's copy of the job, if the executor may run `run` (as just leased, from `previous`) by it."""
    spec = message.job
    if spec is None or run.trigger is not RunTrigger.SCHEDULE or run.workflow_run_id is not None:
        return None
    if previous is not RunStatus.QUEUED or run.attempts != 1 or run.requeues > 0 or run.job_changed_at is not None:
        return None
    parsed = parse_run_id(run.id)
    if parsed is None or now > parsed.scheduled_for + SPEC_FRESH_FOR:
        return None
    return spec
