"""The fault suite's mix with the dispatch fanned out to two workers (issue 16, item 1): whatever kills the
coordinator or a dispatch worker, at any of their crash points, nothing is lost and nothing runs twice."""

from __future__ import annotations

import pytest
from tickwork.faults import FANOUT_CRASH_POINTS, TICK_CRASH_POINTS

from tests.faults.world import assert_a_process_dying_at_keeps_the_promises

KILLS = 3


@pytest.fixture
def pipeline_env() -> dict[str, str]:
    return {"DISPATCH_WORKERS": "2"}


# The tick's crash points are the dispatch workers' here: the coordinator only hands out slices.
@pytest.mark.parametrize("point", [*FANOUT_CRASH_POINTS, *TICK_CRASH_POINTS], ids=lambda p: p.value)
def test_a_coordinator_or_worker_dying_loses_nothing_and_runs_nothing_twice(faulty_pipeline, point):
    assert faulty_pipeline.services.minute_tick.coordinator is not None
    assert_a_process_dying_at_keeps_the_promises(faulty_pipeline, point, kills=KILLS)
