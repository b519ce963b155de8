"""Progress reports (tickwork.executor.progress_reports, tickwork.jobtypes.durable), no AWS: the fraction and data
checked, reports coalesced to one write of their own every few seconds, the rest handed to the heartbeat."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from tickwork.executor.progress_reports import PROGRESS_EVERY, ProgressReports
from tickwork.jobtypes import RunContext
from tickwork.jobtypes.durable import MAX_PROGRESS_DATA_BYTES, MAX_PROGRESS_MESSAGE_CHARS
from tickwork.model.clock import FakeClock


class RecordedRuns:
    def __init__(self) -> None:
        self.written: list[dict[str, Any]] = []

    def report_progress(self, run_id: str, *, owner: str, progress: str) -> bool:
        self.written.append(json.loads(progress))
        return True


def _reporting() -> tuple[RunContext, ProgressReports, RecordedRuns, FakeClock]:
    clock = FakeClock(datetime(2026, 1, 5, 12, tzinfo=UTC))
    runs = RecordedRuns()
    reports = ProgressReports(runs, clock, run_id="r", owner="me")  # type: ignore[arg-type]
    ctx = RunContext("r", "j", "t", 1, clock.now(), clock, progress_sink=reports)
    return ctx, reports, runs, clock


@pytest.mark.parametrize("fraction", [-0.01, 1.5, float("nan"), True, "half"])
def test_a_fraction_outside_zero_to_one_is_a_value_error_and_writes_nothing(fraction):
    ctx, _, runs, _ = _reporting()
    with pytest.raises(ValueError, match="from 0 to 1"):
        ctx.progress(fraction)
    assert runs.written == []


def test_data_json_cannot_hold_or_too_large_is_a_value_error():
    ctx, _, runs, _ = _reporting()
    with pytest.raises(ValueError, match="JSON-serialisable"):
        ctx.progress(data={"at": object()})
    with pytest.raises(ValueError, match=f"limit of {MAX_PROGRESS_DATA_BYTES} bytes"):
        ctx.progress(data="x" * MAX_PROGRESS_DATA_BYTES)
    assert runs.written == []


def test_reports_are_coalesced_and_the_pending_one_rides_on_the_heartbeat():
    ctx, reports, runs, clock = _reporting()
    ctx.progress(0, "started")
    ctx.progress(0.1, data={"page": 1, "note": None})
    ctx.progress(0.2, "page 2" + "!" * 1000)
    assert [w["fraction"] for w in runs.written] == [0.0]  # the first at once, the others wait
    clock.advance(1)
    carried = json.loads(reports.take_pending() or "")  # the heartbeat's beat takes the last one
    assert (carried["fraction"], len(carried["message"])) == (0.2, MAX_PROGRESS_MESSAGE_CHARS)
    assert reports.take_pending() is None
    clock.advance(PROGRESS_EVERY.total_seconds())
    ctx.progress(1.0, "done", {"pages": 2})
    assert runs.written[-1] == {
        "fraction": 1.0,
        "message": "done",
        "data": {"pages": 2},
        "updated_at": "2026-01-05T12:00:06.000Z",
    }
    ctx.progress(1.0, "really done")
    reports.flush()  # the handler ended with one waiting
    assert [w["message"] for w in runs.written] == ["started", "done", "really done"]
    reports.flush()
    assert reports.writes == 3
