"""A job's forecast (tickwork.model.forecasts) on synthetic histories, seeded: the p95 covers 95 % ± 2 % of the next
runs on lognormal durations, stationary or drifting; the sketch's stated error holds against the exact decayed
quantiles; it stays small after 100,000 runs; the success probability converges and follows a change."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tickwork.model.forecasts import (
    ALPHA,
    DURATION_DECAY,
    MAX_BUCKETS,
    MAX_STORED_BYTES,
    MIN_RUNS,
    DurationSketch,
    Forecast,
    ForecastView,
)

MEDIAN_MS = 2_000.0
WITHIN_ALPHA = ALPHA + 1e-12  # a duration on a bucket's edge reads exactly alpha off, give or take a float's rounding


def lognormal(seed: int, sigma: float, runs: int, doubling_every: int | None = None) -> Iterator[float]:
    """Durations around MEDIAN_MS; with `doubling_every`, a median that doubles every that many runs."""
    rng = random.Random(seed)
    for n in range(runs):
        drift = math.log(2) * n / doubling_every if doubling_every else 0.0
        yield math.exp(rng.gauss(math.log(MEDIAN_MS) + drift, sigma))


def coverage_of_next_runs(durations: Iterator[float], warm_up: int = 500) -> float:
    """The share of runs at most the p95 forecast before them (after `warm_up` runs)."""
    forecast, covered, counted = Forecast(), 0, 0
    for n, duration in enumerate(durations):
        if n >= warm_up:
            assert forecast.durations is not None
            covered += duration <= forecast.durations.quantile(0.95)
            counted += 1
        forecast = forecast.observe(succeeded=True, duration_ms=duration)
    return covered / counted


@pytest.mark.parametrize("seed", [1, 2])
def test_the_p95_covers_95_percent_of_the_next_runs_on_stationary_lognormal_durations(seed: int) -> None:
    assert coverage_of_next_runs(lognormal(seed, sigma=0.5, runs=10_500)) == pytest.approx(0.95, abs=0.02)


@pytest.mark.parametrize("seed", [3, 4])
def test_the_p95_covers_95_percent_of_the_next_runs_while_the_median_doubles_every_2000_runs(seed: int) -> None:
    durations = lognormal(seed, sigma=0.5, runs=10_500, doubling_every=2_000)  # the median ends 32 times longer
    assert coverage_of_next_runs(durations) == pytest.approx(0.95, abs=0.02)


def test_a_sketch_that_did_not_forget_would_miss_the_drift() -> None:
    """The coverage test can fail: the p95 of the whole history, not decayed, covers far fewer of the next runs (84 %)."""
    seen: list[float] = []
    covered = 0
    durations = list(lognormal(3, sigma=0.5, runs=4_000, doubling_every=2_000))
    for n, duration in enumerate(durations):
        if n >= 500:
            covered += duration <= sorted(seen)[int(0.95 * len(seen))]
        seen.append(duration)
    assert covered / (len(durations) - 500) < 0.93


def exact_decayed_quantile(durations: list[float], q: float) -> float:
    """The q-quantile of the durations, each weighted d^(its age in runs), as the sketch reads ranks."""
    weighted = sorted((d, DURATION_DECAY ** (len(durations) - 1 - n)) for n, d in enumerate(durations))
    rank, seen = q * sum(w for _, w in weighted), 0.0
    for duration, weight in weighted:
        seen += weight
        if seen > rank:
            return duration
    return weighted[-1][0]


@pytest.mark.parametrize("sigma", [0.3, 0.5])
def test_the_stated_relative_error_holds_against_the_exact_decayed_quantiles(sigma: float) -> None:
    durations = list(lognormal(5, sigma=sigma, runs=3_000))
    forecast = Forecast()
    for n, duration in enumerate(durations, start=1):
        forecast = forecast.observe(succeeded=True, duration_ms=duration)
        if n % 250 == 0:
            assert forecast.durations is not None
            for q in (0.5, 0.95, 0.99):
                exact = exact_decayed_quantile(durations[:n], q)
                assert forecast.durations.quantile(q) == pytest.approx(exact, rel=WITHIN_ALPHA), (n, q)


def test_the_stored_forecast_stays_under_its_bound_after_100000_runs() -> None:
    forecast = Forecast()
    largest = 0
    for n, duration in enumerate(lognormal(6, sigma=1.0, runs=100_000, doubling_every=5_000)):
        forecast = forecast.observe(succeeded=n % 7 != 0, duration_ms=duration)
        if n % 1_000 == 0:
            largest = max(largest, len(forecast.model_dump_json()))
    assert forecast.durations is not None
    assert len(forecast.durations.counts) <= MAX_BUCKETS
    assert largest <= MAX_STORED_BYTES
    assert Forecast.model_validate_json(forecast.model_dump_json()) == forecast


def test_the_success_probability_converges_and_follows_a_change() -> None:
    rng = random.Random(7)
    forecast = Forecast()
    for _ in range(500):
        forecast = forecast.observe(succeeded=rng.random() < 0.9, duration_ms=100)
    assert forecast.p_success == pytest.approx(0.9, abs=0.07)
    for _ in range(100):  # the job starts failing half its runs: four half-lives later, the forecast says so
        forecast = forecast.observe(succeeded=rng.random() < 0.5, duration_ms=100)
    assert forecast.p_success == pytest.approx(0.5, abs=0.1)


def test_a_run_that_never_started_counts_for_success_and_not_for_durations() -> None:
    forecast = Forecast().observe(succeeded=True, duration_ms=1_000).observe(succeeded=False, duration_ms=None)
    assert forecast.runs == 2
    assert forecast.durations is not None
    assert forecast.durations.total == pytest.approx(1.0)
    decayed_success = 2 ** (-1 / 25)  # the first run's success, one run later
    assert forecast.p_success == pytest.approx(decayed_success / (decayed_success + 1), rel=1e-4)


def test_the_view_is_none_until_enough_runs_then_reads_the_quantiles() -> None:
    forecast = Forecast()
    assert forecast.view() is None
    for n in range(MIN_RUNS):
        assert forecast.view() is None
        forecast = forecast.observe(succeeded=n % 4 != 0, duration_ms=1_000 + 10 * n)
    view = forecast.view()
    assert isinstance(view, ForecastView)
    assert view.runs == MIN_RUNS
    assert 1_000 * (1 - ALPHA) <= view.p50_ms <= view.p95_ms <= view.p99_ms <= 1_190 * (1 + ALPHA)
    assert 0.6 < view.p_success < 0.9


def test_a_stored_forecast_that_breaks_its_bounds_is_refused() -> None:
    with pytest.raises(ValidationError):
        DurationSketch.model_validate({"offset": 0, "counts": [1.0] * (MAX_BUCKETS + 1)})
    with pytest.raises(ValidationError):
        DurationSketch.model_validate({"offset": 0, "counts": [1.0, -0.5]})
    with pytest.raises(ValidationError):
        DurationSketch.model_validate({"offset": 0, "counts": []})
    with pytest.raises(ValidationError):
        Forecast.model_validate({"runs": -1})
    with pytest.raises(ValidationError):
        Forecast.model_validate({"runs": 1, "surprise": 1})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), min_size=1, max_size=300))
def test_any_history_keeps_a_bounded_sketch_with_ordered_quantiles(durations: list[float]) -> None:
    forecast = Forecast()
    for duration in durations:
        forecast = forecast.observe(succeeded=True, duration_ms=duration)
    sketch = forecast.durations
    assert sketch is not None
    assert 1 <= len(sketch.counts) <= MAX_BUCKETS
    assert sketch.counts[0] > 0
    assert sketch.counts[-1] > 0
    p50, p95, p99 = (sketch.quantile(q) for q in (0.5, 0.95, 0.99))
    assert p50 <= p95 <= p99 <= max(*durations, 1.0) * (1 + ALPHA)
    assert DurationSketch.model_validate(sketch.model_dump()) == sketch


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=1, max_value=1e9, allow_nan=False), st.integers(min_value=1, max_value=200))
def test_a_job_that_always_takes_the_same_time_forecasts_it_within_alpha(duration: float, runs: int) -> None:
    forecast = Forecast()
    for _ in range(runs):
        forecast = forecast.observe(succeeded=True, duration_ms=duration)
    assert forecast.durations is not None
    for q in (0.0, 0.5, 0.95, 0.99, 1.0):
        assert forecast.durations.quantile(q) == pytest.approx(duration, rel=WITHIN_ALPHA)


def test_the_worked_examples_in_docs_forecasts_run() -> None:
    """Every ```python block of the page, in order, in one namespace (a later example may use an earlier's names)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "forecasts.md").read_text(encoding="utf-8")
    examples = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(examples) >= 4
    namespace: dict[str, object] = {}
    for example in examples:
        exec(compile(example, "docs/forecasts.md", "exec"), namespace)
