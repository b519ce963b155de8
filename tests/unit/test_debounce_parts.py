"""Debounce's pure parts: which window's run a trigger may still join, and what that run carries once it has."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.control.debounce import joinable, joined_payload
from tickwork.model.policies import MAX_COLLECTED_BYTES, MAX_COLLECTED_PAYLOADS, DebounceWindow
from tickwork.model.run import Run
from tickwork.model.states import RunStatus

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
ENDS = NOW + timedelta(seconds=30)


def _window_run(*, status: RunStatus = RunStatus.QUEUED, collect: bool = False, payload=None, ends=ENDS) -> Run:
    return Run(
        id="j1.1795262400000.m",
        job_id="j1",
        tenant="t",
        scheduled_for=ends,
        not_before=ends,
        status=status,
        debounce=DebounceWindow(key="k", collect=collect),
        payload=payload,
    )


def test_a_queued_run_before_its_windows_end_may_be_joined_by_its_key():
    assert joinable(_window_run(), "k", NOW)


def test_a_leased_or_ended_run_a_run_past_its_end_or_of_another_key_may_not():
    assert not joinable(_window_run(status=RunStatus.RUNNING), "k", NOW)
    assert not joinable(_window_run(status=RunStatus.SUCCEEDED), "k", NOW)
    assert not joinable(_window_run(ends=NOW), "k", NOW)
    assert not joinable(_window_run(), "other", NOW)
    assert not joinable(None, "k", NOW)


def test_the_last_payload_wins_without_collect():
    assert joined_payload(_window_run(payload={"n": 1}), {"n": 2}) == {"n": 2}


def test_collect_appends_each_payload():
    run = _window_run(collect=True, payload={"payloads": [{"n": 1}]})
    assert joined_payload(run, {"n": 2}) == {"payloads": [{"n": 1}, {"n": 2}]}


def test_a_full_collecting_window_takes_no_more_payloads():
    full = _window_run(collect=True, payload={"payloads": [{}] * MAX_COLLECTED_PAYLOADS})
    assert joined_payload(full, {"n": 1}) is None
    big = _window_run(collect=True, payload={"payloads": [{"x": "y" * (MAX_COLLECTED_BYTES - 100)}]})
    assert joined_payload(big, {"x": "y" * 200}) is None
