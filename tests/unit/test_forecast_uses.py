"""What a job's forecast is put to (tickwork.model.forecast_uses), and the claim's fold of its ended runs
(tickwork.model.forecasts.JobForecasts): pure, from values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tickwork.model.forecast_uses import (
    TimeoutVerdict,
    deadline_at_risk,
    job_forecast,
    outlook,
    run_slow,
    timeout_advice,
)
from tickwork.model.forecasts import BASELINE, MIN_RUNS, EndedRun, ForecastView, JobForecasts

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
VIEW = ForecastView(p50_ms=2_000, p95_ms=4_000, p99_ms=6_000, p_success=0.9, runs=100)


def test_a_runs_outlook_is_its_start_plus_the_p50_and_the_jobs_success_probability() -> None:
    seen = outlook(VIEW, start=T0, deadline_at=T0 + timedelta(seconds=5))
    assert seen is not None
    assert seen.expected_end_at == T0 + timedelta(seconds=2)
    assert seen.p_success == 0.9
    assert (seen.forecast_p95_ms, seen.forecast_p99_ms) == (4_000, 6_000)
    assert seen.deadline_at_risk is False
    assert outlook(None, start=T0, deadline_at=None) is None


@pytest.mark.parametrize(("within_ms", "at_risk"), [(3_999, True), (4_000, False), (10_000, False)])
def test_a_run_is_at_risk_when_its_start_plus_the_p95_passes_its_deadline(within_ms: int, at_risk: bool) -> None:
    deadline = T0 + timedelta(milliseconds=within_ms)
    assert deadline_at_risk(start=T0, p95_ms=4_000, deadline_at=deadline) is at_risk


def test_a_late_start_puts_a_run_at_risk_that_its_scheduled_start_did_not() -> None:
    deadline = T0 + timedelta(seconds=5)
    assert not deadline_at_risk(start=T0, p95_ms=4_000, deadline_at=deadline)
    assert deadline_at_risk(start=T0 + timedelta(seconds=2), p95_ms=4_000, deadline_at=deadline)


def test_no_deadline_or_no_forecast_is_never_at_risk() -> None:
    assert not deadline_at_risk(start=T0, p95_ms=4_000, deadline_at=None)
    assert not deadline_at_risk(start=T0, p95_ms=None, deadline_at=T0)


def test_a_run_is_slow_past_the_p99_times_the_factor() -> None:
    assert not run_slow(ran_ms=12_000, p99_ms=6_000, factor=2)
    assert run_slow(ran_ms=12_001, p99_ms=6_000, factor=2)
    assert run_slow(ran_ms=7_000, p99_ms=6_000, factor=1.1)
    assert not run_slow(ran_ms=1e9, p99_ms=None)


def test_a_timeout_far_above_the_p99_is_too_long_with_the_p99_times_3_suggested() -> None:
    advice = timeout_advice(300, VIEW)  # 300 s against a p99 of 6 s
    assert advice is not None
    assert advice.verdict is TimeoutVerdict.TOO_LONG
    assert advice.suggested_seconds == 18


def test_a_timeout_under_the_p95_is_too_short() -> None:
    advice = timeout_advice(3, VIEW)  # 3 s against a p95 of 4 s
    assert advice is not None
    assert advice.verdict is TimeoutVerdict.TOO_SHORT
    assert advice.suggested_seconds == 18


@pytest.mark.parametrize("timeout", [4, 18, 60])
def test_a_timeout_between_the_p95_and_ten_times_the_p99_needs_no_advice(timeout: int) -> None:
    assert timeout_advice(timeout, VIEW) is None


def test_a_short_job_is_suggested_no_less_than_5_seconds() -> None:
    quick = VIEW.model_copy(update={"p50_ms": 10, "p95_ms": 20, "p99_ms": 30})
    advice = timeout_advice(300, quick)
    assert advice is not None
    assert advice.suggested_seconds == 5
    assert timeout_advice(5, quick) is None  # 5 s is what it would suggest: nothing to say


def test_the_jobs_answer_shows_its_next_runs_outlook() -> None:
    shown = job_forecast(VIEW, next_run_at=T0, deadline_seconds=3, timeout_seconds=300)
    assert shown is not None
    assert shown.next_run is not None
    assert shown.next_run.expected_end_at == T0 + timedelta(seconds=2)
    assert shown.next_run.deadline_at_risk is True
    assert shown.timeout_advice is not None
    assert job_forecast(None, next_run_at=T0, deadline_seconds=None, timeout_seconds=300) is None


def _ended(n: int, *, settled: bool = True, succeeded: bool | None = True, variant: str = BASELINE) -> EndedRun:
    return EndedRun(sort_key=f"RUN#{n:013d}", settled=settled, succeeded=succeeded, duration_ms=1_000, variant=variant)


def test_the_fold_counts_the_settled_runs_up_to_the_first_open_one_and_moves_its_cursor_past_them() -> None:
    folded = JobForecasts().fold([_ended(1), _ended(2, succeeded=None), _ended(3, settled=False), _ended(4)])
    assert folded.through == "RUN#0000000000002"  # the skip moved it; the open run holds it
    assert folded.variants[BASELINE].runs == 1
    again = folded.fold([_ended(3), _ended(4)])
    assert again.through == "RUN#0000000000004"
    assert again.variants[BASELINE].runs == 3


def test_a_fold_that_finds_nothing_settled_changes_nothing() -> None:
    forecasts = JobForecasts()
    assert forecasts.fold([]) is forecasts
    assert forecasts.fold([_ended(1, settled=False)]) is forecasts


def test_each_variant_keeps_its_own_forecast_and_reads_as_the_baseline_until_it_has_enough_runs() -> None:
    runs = [_ended(n) for n in range(MIN_RUNS)] + [_ended(MIN_RUNS + n, variant="v2") for n in range(3)]
    folded = JobForecasts().fold(runs)
    assert folded.variants["v2"].runs == 3
    assert folded.of("v2") is folded.variants[BASELINE]
    assert folded.view("v2") == folded.view()
    assert JobForecasts.model_validate_json(folded.model_dump_json(exclude_defaults=True)) == folded
