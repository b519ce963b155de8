"""Stuck runs through the real tick: a run nobody leases is counted in StuckRuns once it is QUEUED more than 5
minutes past its time, from the due entries the tick reads anyway."""

from __future__ import annotations

from datetime import timedelta

from tests.harness import START

FAR = timedelta(minutes=10)


def test_a_run_no_executor_takes_is_counted_stuck_after_five_minutes(pipeline):
    pipeline.create_job(schedule={"at": START + FAR}, payload={})
    pipeline.clock.advance(FAR.total_seconds())
    dispatcher = pipeline.services.dispatcher
    assert dispatcher.claim_due_runs().stuck == 0
    seen = []
    for _ in range(8):  # a tick a minute, no executor
        pipeline.clock.advance(60)
        seen.append(dispatcher.claim_due_runs().stuck)
    assert seen[:4] == [0, 0, 0, 0]  # re-sent, not yet stuck
    assert max(seen[4:]) == 1  # counted from 5 minutes past its time, whenever its entry comes due
