"""A realistic mix of jobs driven through ticks and executor batches on the fake clock, with faults, then without.

Time is the fake clock's, for SQS too: moto's delays and visibility timeouts are read from it (see the
`faulty_pipeline` fixture), so a message sent with DelaySeconds, or left by an executor that died, comes back
when the fake clock says so. The settings are the template's (lease 60 s, re-send after 30 s): where this suite
says a run recovers, it recovers within production bounds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import takewhile
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from tickwork.aws.results import result_key
from tickwork.model.claim_plan import ClaimableJob
from tickwork.model.ids import run_id_for
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.states import JobState, RunStatus

from tests.faults import jobtypes
from tests.faults.crashes import ProcessKilled
from tests.harness import START, Pipeline

STEP_SECONDS = 5  # how often the executors poll (the fake clock moves by this between polls)
TICK_EVERY = 60
ACTIVE = timedelta(minutes=6)  # faults are on; every occurrence of the mix falls in here
# After the faults stop, every run must be terminal within this: a lost message is re-sent 30 s after the run's
# time, and again 30 s after each re-send while none is leased; a dead executor's run comes back after lease +
# 15 s; retries back off seconds here. Twenty minutes leaves room for several of those in a row.
RECOVERY_BOUND = timedelta(minutes=20)
TERMINAL = {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.SKIPPED}


@dataclass
class Planned:
    job: Job
    occurrences: list[datetime]


@dataclass
class World:
    pipeline: Pipeline
    planned: list[Planned] = field(default_factory=list)
    process_deaths: int = 0  # ticks and executor batches that died at a crash point
    aws_failures: int = 0  # ticks and executor batches that an AWS error reached past the SDK's retries
    next_tick: datetime = START

    def create_mix(self) -> None:
        """One-shot, cron, rate, a slow run (it beats its heartbeat), a retrying job and a failing job."""
        end = START + timedelta(minutes=4)
        specs: list[dict[str, Any]] = [
            {"type": "fault-echo", "schedule": {"at": START + timedelta(seconds=90)}},
            {"type": "fault-echo", "schedule": {"cron": "* * * * *", "end_at": end}},
            {"type": "fault-echo", "schedule": {"rate": "45 seconds", "end_at": end}},
            # Attempts an executor dies in still count: enough of them that the suite's deaths never exhaust it.
            {"type": "fault-slow", "schedule": {"at": START + timedelta(seconds=100)}, "retry": {"max_attempts": 5}},
            {"type": "fault-flaky", "schedule": {"at": START + timedelta(seconds=130)}, "retry": {"max_attempts": 3}},
            {"type": "fault-doomed", "schedule": {"at": START + timedelta(seconds=150)}, "retry": {"max_attempts": 2}},
        ]
        for spec in specs:
            job = self.pipeline.create_job(**spec)
            assert job.next_run_at is not None
            horizon = job.schedule.end_at or job.next_run_at
            planned = ClaimableJob.from_job(job).occurrences_from(job.next_run_at)
            self.planned.append(Planned(job, list(takewhile(lambda t: t <= horizon, planned))))

    # ------------------------------------------------------------ driving

    def run_for(self, duration: timedelta) -> None:
        """Ticks every minute and executor polls every STEP_SECONDS, for `duration` of fake time."""
        end = self.pipeline.clock.now() + duration
        while self.pipeline.clock.now() < end:
            if self.pipeline.clock.now() >= self.next_tick:
                self._survive(self.pipeline.tick)
                if self.pipeline.services.settings.dispatch_workers > 1:
                    self.work_slices()
                while self.next_tick <= self.pipeline.clock.now():
                    self.next_tick += timedelta(seconds=TICK_EVERY)
            self.poll()
            # A slow handler moves the fake clock itself: step to the next multiple of STEP_SECONDS.
            elapsed = (self.pipeline.clock.now() - START).total_seconds()
            self.pipeline.clock.advance(STEP_SECONDS - elapsed % STEP_SECONDS)

    def recover(self, bound: timedelta) -> None:
        """Run on, fault-free, until every run of the mix is settled, checking each minute; at most `bound`."""
        end = self.pipeline.clock.now() + bound
        while self.pipeline.clock.now() < end and not self.settled():
            self.run_for(timedelta(seconds=TICK_EVERY))

    def settled(self) -> bool:
        """Every run of the mix terminal (and so, by tickwork.progress.job_completion, every job COMPLETED: the
        promises check that apart)."""
        return all(
            len(runs := self.pipeline.runs_of(p.job.id)) == len(p.occurrences)
            and all(r.status in TERMINAL for r in runs)
            for p in self.planned
        )

    def poll(self) -> None:
        """The event source mapping: receive what is visible, one executor invocation per batch."""
        for band in Band:
            for _ in range(20):
                messages = self._survive(self.pipeline.receive, band)
                if not messages:
                    break
                self._survive(self.pipeline.deliver, band, messages)

    def work_slices(self) -> None:
        """The dispatch queue's event source, when the tick is fanned out: one worker invocation per slice."""
        for _ in range(10):
            messages = self._survive(self.pipeline.receive_slices)
            if not messages:
                return
            for message in messages:
                self._survive(self.pipeline.dispatch, message)

    def _survive(self, call: Any, *args: Any) -> Any:
        """A process that died, or an error past the SDK's retries: the platform carries on (the next tick,
        the next poll), as Lambda and the event source mapping do."""
        try:
            return call(*args)
        except ProcessKilled:
            self.process_deaths += 1
        except (ClientError, BotoCoreError):
            self.aws_failures += 1
        return None

    # ------------------------------------------------------------ the promises

    def assert_promises_kept(self) -> None:
        p = self.pipeline
        bucket = p.resources.results_bucket
        expected_keys: set[str] = set()
        for planned in self.planned:
            job, type_name = planned.job, planned.job.type
            runs = p.runs_of(job.id)
            # Every occurrence has exactly one run record, and it is terminal.
            assert [r.id for r in runs] == [run_id_for(job.id, t) for t in planned.occurrences], type_name
            stuck = [(r.id, r.status) for r in runs if r.status not in TERMINAL]
            assert not stuck, f"{type_name}: not terminal past the bound: {stuck}"
            assert p.services.store.jobs.get_job(job.id).state is JobState.COMPLETED, type_name  # type: ignore[union-attr]
            for run in runs:
                expected = jobtypes.expected_result(type_name, run.id)
                completions = jobtypes.COMPLETIONS.get(run.id, [])
                # No attempt runs to completion twice (one place at a time); a second completion happens only
                # in a later attempt, a takeover after an expired lease, and still leaves one result.
                assert len(completions) == len(set(completions)), (type_name, run.id, completions)
                if expected is None:
                    assert run.status is RunStatus.FAILED, (type_name, run.status)
                    assert run.error is not None
                    assert run.error.type in ("DoomedError", "AttemptsExhausted")
                    assert not completions
                    continue
                assert run.status is RunStatus.SUCCEEDED, (type_name, run.id, run.status, run.error)
                assert completions, (type_name, run.id)
                assert len(completions) == 1 or run.attempts > min(completions), (type_name, completions)
                stored = json.loads(p.s3.get_object(Bucket=bucket, Key=result_key(run))["Body"].read())
                assert stored == expected, (type_name, stored)
                expected_keys.add(result_key(run))
        # No result for anything else (a run that failed, or a run record that should not exist).
        assert set(p.result_objects()) == expected_keys


def assert_a_process_dying_at_keeps_the_promises(pipeline: Pipeline, point: Any, *, kills: int) -> None:
    """The mix, with the process dying at `point` up to `kills` times while it is active; then, fault-free,
    every promise kept within RECOVERY_BOUND."""
    world = World(pipeline)
    world.create_mix()
    pipeline.crashes.arm(point, times=kills)
    world.run_for(ACTIVE)
    pipeline.crashes.disarm()
    # Died there (claim threads of one tick may reach the point together: one death, several kills).
    assert pipeline.crashes.kills >= 1, "the mix never reached the crash point"
    assert 1 <= world.process_deaths <= pipeline.crashes.kills
    world.recover(RECOVERY_BOUND)
    world.assert_promises_kept()
