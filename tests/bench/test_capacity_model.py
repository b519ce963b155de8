"""The capacity model's invariants (benchmarks/capacity.py): pure Python, no AWS, deterministic for its seed.

Calibrated with benchmarks/results.json, as `make bench` runs it. Each simulation covers a whole day, second by
second (about 3 s each), so the tests share what they can.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest

from benchmarks import capacity
from benchmarks.capacity import Calibration, Latency, Scenario

LOOSE = 0.001  # s: the sampled slots of a second's starts


@pytest.fixture(scope="module")
def cal() -> Calibration:
    return capacity.load_calibration()


@pytest.fixture(scope="module")
def sized() -> Scenario:
    return capacity.scenarios()[0]


@pytest.fixture(scope="module")
def sized_result(sized: Scenario, cal: Calibration) -> dict[str, Any]:
    return capacity.simulate(sized, cal)


@pytest.fixture(scope="module")
def one_worker(sized: Scenario, cal: Calibration) -> dict[str, Any]:
    return capacity.simulate(replace(sized, name="W=1", workers=1, workers_max=0), cal)


def _ample(precision: str) -> Scenario:
    # 100,000 runs a day against 10,000 shards, 100 mappings and no table maximum: the :00 bursts (313 runs)
    # start within a millisecond of their second.
    return Scenario(
        f"ample, {precision}",
        100_000,
        shards=10_000,
        workers=64,
        executor_mappings=100,
        executor_floor=1_000,
        table_max_wru=1e12,
        precision=precision,
    )


def test_every_run_starts_exactly_once(sized_result: dict[str, Any]) -> None:
    assert sized_result["started"] == sized_result["runs"] == 100_000_000
    assert sized_result["unstarted"] == 0
    assert sized_result["overstarted_cohorts"] == 0


def test_runs_left_waiting_are_counted_once_and_late(one_worker: dict[str, Any]) -> None:
    assert one_worker["started"] + one_worker["unstarted"] == one_worker["runs"]
    assert one_worker["unstarted"] > 0
    assert one_worker["overstarted_cohorts"] == 0


def test_no_fan_out_at_100m_a_day_is_late(one_worker: dict[str, Any], sized_result: dict[str, Any]) -> None:
    # One worker claims ~260 runs/s against an average of 1,157/s: the backlog grows all day.
    assert one_worker["peak"]["p99"] > 3_600
    assert one_worker["workers_max"] == 1
    assert sized_result["peak"]["p99"] <= capacity.LATE_GOAL_S


def test_lateness_is_zero_when_capacity_is_ample(cal: Calibration) -> None:
    # Precise starts: a run starts at its instant plus the executor's pickup (receive, visibility, lease), no later.
    result = capacity.simulate(_ample("precise"), cal)
    pickup = result["executor"]["pickup_s"]
    assert result["unstarted"] == 0
    assert result["late_claims"] == 0
    assert result["peak"]["max"] - pickup < LOOSE
    assert result["day"]["max"] - pickup < LOOSE


def test_second_precision_adds_only_the_rounding_when_capacity_is_ample(cal: Calibration) -> None:
    result = capacity.simulate(_ample("second"), cal)
    pickup = result["executor"]["pickup_s"]
    assert result["day"]["max"] - pickup <= 1 + LOOSE  # DelaySeconds rounds up to the next whole second
    assert result["peak"]["max"] - pickup <= 1 + LOOSE


def test_no_network_wait_leaves_no_pickup(cal: Calibration) -> None:
    ample = replace(_ample("precise"), latency=Latency(dynamodb=0.0, sqs=0.0, s3=0.0))
    timing = capacity.executor_timing(ample, cal)
    assert timing["pickup_s"] == pytest.approx(3 * cal.cpu_per_request_ms / 1000)


def test_more_shards_never_make_it_later(sized: Scenario, sized_result: dict[str, Any], cal: Calibration) -> None:
    results = [capacity.simulate(replace(sized, shards=n), cal) for n in (8, 64, 512)] + [sized_result]
    p99s = [r["peak"]["p99"] for r in results]
    maxes = [r["peak"]["max"] for r in results]
    # Never later by more than a millisecond: past enough shards the rest is how run ids hash onto them (a seeded
    # draw), not the shards' number.
    assert all(later <= earlier + 0.001 for earlier, later in itertools.pairwise(p99s)), p99s
    assert all(later <= earlier + 0.001 for earlier, later in itertools.pairwise(maxes)), maxes
    assert p99s[0] > capacity.LATE_GOAL_S  # 8 shards (today's default) cannot take 100M a day


def test_cost_per_million_is_section_twos(cal: Calibration, sized: Scenario) -> None:
    from benchmarks import cost

    recorded = capacity._results_file(capacity.RESULTS)["cost"]["per_million"]
    assert cal.section1 is not None
    figures = capacity.cost_per_million(sized, cal, worker_busy_s=0.0, batch_s=0.0)
    assert figures["section2"] == pytest.approx(cost.per_million(cal.section1)["tickwork_total"])
    assert figures["section2"] == pytest.approx(recorded["tickwork_total"], abs=0.005)
    assert figures["scheduler"] == pytest.approx(recorded["scheduler_total"], abs=0.005)
    # The simulated figure swaps only the Lambda compute (and adds the fan-out's invocations).
    swapped = figures["section2"] - figures["section2_compute"] + figures["simulated_compute"]
    assert figures["simulated"] == pytest.approx(swapped + figures["fan_out_invocations"])


def test_calibration_without_section_1_is_refused() -> None:
    with pytest.raises(ValueError, match="section 1"):
        capacity.load_calibration({"dispatch": {}})


def test_a_peak_below_the_hourly_bunches_is_refused() -> None:
    with pytest.raises(ValueError, match="peak_factor"):
        capacity.day_profile(1_000_000, peak_factor=2.0, background_share=0.5, seed=1)


def test_the_day_has_a_peak_minute_of_five_times_the_average() -> None:
    cron, background = capacity.day_profile(100_000_000, peak_factor=5.0, background_share=0.5, seed=16)
    per_minute = [sum(cron[m * 60 : m * 60 + 60]) + sum(background[m * 60 : m * 60 + 60]) for m in range(1440)]
    assert sum(per_minute) == 100_000_000
    assert max(per_minute) == per_minute[capacity.PEAK_MINUTE]
    assert per_minute[capacity.PEAK_MINUTE] == pytest.approx(5 * 100_000_000 / 1440, rel=0.001)
