"""Whatever dies at any crash point, nothing is lost and nothing runs twice (issue 11, item 1)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tickwork.faults import (
    AUDIT_CRASH_POINTS,
    EVENT_CRASH_POINTS,
    EXECUTOR_CRASH_POINTS,
    FANOUT_CRASH_POINTS,
    REDRIVE_CRASH_POINTS,
    TICK_CRASH_POINTS,
    WORKFLOW_CRASH_POINTS,
    CrashPoint,
)
from tickwork.model.ids import run_id_for
from tickwork.model.states import RunStatus

from tests.faults.world import ACTIVE, RECOVERY_BOUND, Planned, World, assert_a_process_dying_at_keeps_the_promises
from tests.harness import START

KILLS = 3  # the process dies at the point this many times (each a different tick or executor invocation)


@pytest.mark.parametrize("point", [*TICK_CRASH_POINTS, *EXECUTOR_CRASH_POINTS], ids=lambda p: p.value)
def test_a_process_dying_at_a_crash_point_loses_nothing_and_runs_nothing_twice(faulty_pipeline, point):
    assert_a_process_dying_at_keeps_the_promises(faulty_pipeline, point, kills=KILLS)


def test_every_crash_point_is_named_for_the_tick_the_executor_a_workflow_run_or_the_fan_out():
    named = set(TICK_CRASH_POINTS) | set(EXECUTOR_CRASH_POINTS) | set(WORKFLOW_CRASH_POINTS) | set(FANOUT_CRASH_POINTS)
    named |= set(EVENT_CRASH_POINTS) | set(AUDIT_CRASH_POINTS)  # tests/integration/test_audit_archive.py
    named |= set(REDRIVE_CRASH_POINTS)  # tests/integration/test_redrive_audit_outbox.py
    assert named == set(CrashPoint)
    assert len(FANOUT_CRASH_POINTS) == 2  # tests/faults/test_fanout_crash.py
    assert len(TICK_CRASH_POINTS) == 4
    assert len(EXECUTOR_CRASH_POINTS) == 6
    assert len(WORKFLOW_CRASH_POINTS) == 4  # the mix here has no workflow: tests/faults/test_workflow_crash.py


def test_without_faults_the_mix_keeps_every_promise(faulty_pipeline):
    world = World(faulty_pipeline)
    world.create_mix()
    world.run_for(ACTIVE)
    world.recover(RECOVERY_BOUND)
    assert world.process_deaths == world.aws_failures == 0
    world.assert_promises_kept()


def test_a_lapsed_lease_whose_message_is_stranded_is_re_sent_by_the_tick(faulty_pipeline):
    """Found by the soak (docs/reliability.md): an executor dies holding a run's lease; when the message comes
    back, the executor that receives it dies too, before its first ChangeMessageVisibility, so the message is
    invisible for the queue's 5,400 s. The run must not wait for it: the due index is the safety net of every
    state a run can be in without an outcome, a leased one included."""
    world = World(faulty_pipeline)
    job = faulty_pipeline.create_job(type="fault-echo", schedule={"at": START + timedelta(seconds=90)})
    assert job.next_run_at is not None
    world.planned.append(Planned(job, [job.next_run_at]))
    run_id = run_id_for(job.id, job.next_run_at)
    faulty_pipeline.crashes.arm(CrashPoint.EXECUTOR_AFTER_LEASE)
    world.run_for(timedelta(seconds=100))
    assert faulty_pipeline.crashes.kills == 1
    assert faulty_pipeline.run(run_id).status is RunStatus.RUNNING
    faulty_pipeline.crashes.arm(CrashPoint.EXECUTOR_ON_RECEIVE)
    world.run_for(timedelta(seconds=90))  # the lease and the message's 15 s margin lapse; its receiver dies
    assert faulty_pipeline.crashes.kills == 1
    faulty_pipeline.crashes.disarm()
    world.recover(timedelta(minutes=10))  # far less than the 5,400 s the message is stranded for
    world.assert_promises_kept()
    assert world.process_deaths == 2
