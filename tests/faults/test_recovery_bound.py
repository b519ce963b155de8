"""A run recovers within one recovery's bound of what struck it, however old it is (issue 25, item 11).

The full soak had a run start 1,426.5 s late. A message received by an executor that dies before changing its
visibility is invisible for the queue's 5,400 s, so only the tick's re-send brings its run. Each re-send was
followed by a wait that grew with the run's age (at least 5 minutes, then doubling): a run whose messages were
lost a few times in a row waited 5, then 11, then 22 minutes for the next one, and a lease taken from a re-sent
message left the run's due-index entry that far out too, so a lapsed lease whose message was stranded waited
for it as well.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tickwork.faults import CrashPoint
from tickwork.model.ids import run_id_for
from tickwork.model.states import RunStatus
from tickwork.tick.resender import one_recovery_bound

from tests.faults.world import STEP_SECONDS, TICK_EVERY, Planned, World
from tests.harness import START, Pipeline


def _bound(pipeline: Pipeline) -> timedelta:
    """One recovery's bound with the pipeline's settings (the template's: lease 60 s, re-send after 30 s)."""
    settings = pipeline.services.settings
    return one_recovery_bound(
        lease_for=timedelta(seconds=settings.lease_seconds),
        redispatch_after=timedelta(seconds=settings.redispatch_after_seconds),
        tick_period=timedelta(seconds=TICK_EVERY),
    )


def _until_killed(world: World, point: CrashPoint, *, times: int = 1) -> datetime:
    """Run on, the process dying at `point` the next `times` times it is reached; when it last died."""
    crashes = world.pipeline.crashes
    crashes.arm(point, times=times)
    deadline = world.pipeline.clock.now() + timedelta(hours=1)
    while crashes.kills < times:
        assert world.pipeline.clock.now() < deadline, f"{point.value} reached {crashes.kills} of {times} times"
        world.run_for(timedelta(seconds=STEP_SECONDS))
    crashes.disarm()
    return world.pipeline.clock.now()


def test_a_run_whose_messages_are_stranded_again_and_again_recovers_within_one_recovery_of_the_last(
    faulty_pipeline,
):
    pipeline = faulty_pipeline
    world = World(pipeline)
    job = pipeline.create_job(type="fault-echo", schedule={"at": START + timedelta(seconds=90)})
    assert job.next_run_at is not None
    world.planned.append(Planned(job, [job.next_run_at]))
    run_id = run_id_for(job.id, job.next_run_at)
    # Its first message and two re-sends are received by executors that die before changing their visibility.
    _until_killed(world, CrashPoint.EXECUTOR_ON_RECEIVE, times=3)
    assert pipeline.run(run_id).status is RunStatus.QUEUED
    # The next re-send is leased, and its executor dies; when the message comes back, its receiver dies too.
    _until_killed(world, CrashPoint.EXECUTOR_AFTER_LEASE)
    assert pipeline.run(run_id).status is RunStatus.RUNNING
    last_death = _until_killed(world, CrashPoint.EXECUTOR_ON_RECEIVE)
    world.recover(timedelta(hours=1))  # the message itself is stranded for 90 minutes: only a re-send brings it
    world.assert_promises_kept()
    run = pipeline.run(run_id)
    assert run.finished_at is not None
    assert run.finished_at - last_death <= _bound(pipeline), f"{run.finished_at - last_death} after the last death"
    assert run.attempts == 2  # the dead executor's lease, then the re-send's
    assert world.process_deaths == 5
