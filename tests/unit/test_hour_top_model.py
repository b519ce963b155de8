"""The hour-top burst model (benchmarks/hour_top.py) and the like-for-like cost arithmetic (benchmarks/cost_compare.py):
pure, no AWS, fast (small bursts, steps of 20 ms)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks import cost_compare, hour_top
from benchmarks.hour_top import Burst


def _burst(**changes: object) -> Burst:
    # 20,000 runs at the instant against ample stores: what binds is what the test changes.
    b = Burst(
        "test",
        burst_runs=20_000,
        background_per_s=100.0,
        batch_s=0.12,
        pickup_s=0.03,
        cold_start_s=0.5,
        exec_wru=8.0,
        exec_due_writes=1.0,
        hashed_shards=False,
        account_concurrency=100_000,
        esm_mode="provisioned",
        esm_floor=5_000,
        warm_environments=5_000,
        rounding=False,
        tail_s=120.0,
    )
    return replace(b, **changes)  # type: ignore[arg-type]


def test_the_busiest_partition_holds_3_to_5_of_1000_shards_at_the_default_seed() -> None:
    busiest = hour_top.busiest_partition(1_000, 1_000, Burst.seed)
    assert 3 <= busiest <= 5
    # More partitions spread the same shards thinner; one partition holds them all.
    assert hour_top.busiest_partition(1_000, 8_000, Burst.seed) < busiest
    assert hour_top.busiest_partition(1_000, 1, Burst.seed) == 1_000


def test_cron_rounding_adds_lateness() -> None:
    aligned = hour_top.simulate(_burst())
    rounded = hour_top.simulate(_burst(rounding=True))
    assert aligned["p99"] < 0.2
    assert rounded["p99"] > aligned["p99"] + 0.5  # visible up to a second after the instant
    assert rounded["max"] < aligned["max"] + 1.0 + hour_top.STEP_S


def test_a_burst_with_warm_up_has_a_lower_p99_than_without() -> None:
    cold = _burst(burst_runs=200_000, warm_environments=0, esm_mode="standard", esm_floor=0, account_concurrency=1_000)
    warm = hour_top.with_warm_up(cold, hour_top.environments_needed(cold, 2.0))
    cold_result, warm_result = hour_top.simulate(cold), hour_top.simulate(warm)
    assert warm_result["p99"] < cold_result["p99"] / 3
    assert warm_result["p99"] <= 2.0
    assert cold_result["unstarted"] == warm_result["unstarted"] == 0


def test_new_environments_pay_the_cold_start_and_come_1000_per_10_s() -> None:
    no_warm = _burst(burst_runs=100_000, warm_environments=0, esm_floor=100_000)
    instant = hour_top.simulate(replace(no_warm, lambda_scaling=False))
    scaled = hour_top.simulate(no_warm)
    assert scaled["p50"] > instant["p50"] + 0.4  # the 500 ms cold start before any batch
    assert scaled["peak_concurrency"] <= 2 * hour_top.LAMBDA_NEW_ENVIRONMENTS + 1


def test_the_account_concurrency_caps_the_executors() -> None:
    result = hour_top.simulate(_burst(burst_runs=100_000, account_concurrency=1_000, warm_environments=0))
    assert result["peak_concurrency"] <= 1_000 + 1e-6
    assert result["binds"] == "executors"


def test_the_due_index_binds_when_shards_crowd_its_partitions() -> None:
    crowded = _burst(burst_runs=200_000, shards=10, exec_due_writes=2.0, hashed_shards=True)
    result = hour_top.simulate(crowded)
    assert result["binds"] == "due index"
    # 10 shards at 1,000 WCU over their busiest partition's count, 2 writes a run.
    assert result["stores_runs_per_s"]["due index"] == 10 * 1_000 / result["busiest_partition"] / 2


def test_s3_without_split_prefixes_binds_results_in_s3() -> None:
    result = hour_top.simulate(_burst(burst_runs=50_000, results_in_s3=True))
    assert result["binds"] == "S3"
    assert result["peak_starts_per_s"] <= hour_top.S3_PUT_PER_PREFIX + 1e-6


def test_a_new_table_serves_its_warm_throughput_or_double_its_previous_peak() -> None:
    b = _burst(table_warm_wru=float(hour_top.NEW_TABLE_WRU), background_per_s=1_000.0)
    assert hour_top.table_runs_per_s(b) == 2 * 1_000.0 * 8.0 / 8.0  # double the steady 8,000 WRU/s
    assert hour_top.table_runs_per_s(replace(b, table_quota_wru=4_000.0)) == 500.0


def test_warming_invocations_are_priced_per_hour_top() -> None:
    prices = hour_top.WarmUpPrices(gb_s=1e-5, request=2e-7, provisioned_gb_s=4e-6)
    money = hour_top.warm_up_cost(2_500, 1_024, 0.5, prices)
    assert money["lead_s"] == 30.0  # 3 windows of 1,000 new environments
    held = 15.0 + 0.5
    assert money["warming_invocations_usd"] == pytest.approx(2_500 * 720 * (held * 1e-5 + 2e-7))
    assert money["provisioned_concurrency_usd"] == pytest.approx(2_500 * 600 * 720 * 4e-6)
    assert money["cheaper_usd"] == min(money["warming_invocations_usd"], money["provisioned_concurrency_usd"])


def test_provisioned_capacity_wins_above_about_29_percent_utilisation() -> None:
    modes = cost_compare.capacity_modes(16.0, 100_000_000, 3_000_000.0)
    provisioned = [m for m in modes["modes"] if m["mode"] == "provisioned"]
    assert provisioned[0]["break_even_utilisation"] == pytest.approx(0.289, abs=0.001)
    average, peak = provisioned
    assert average["per_million"] < modes["on_demand"] < peak["per_million"]


def test_inline_like_for_like_leaves_out_the_schedulers_s3_put() -> None:
    lines = [{"item": "S3 PUT: the result object", "usd": 5.0}, {"item": "DynamoDB writes", "usd": 2.0}]
    inline = {"tickwork_total": 6.0, "scheduler": lines, "scheduler_total": 7.0}
    s3 = {"tickwork_total": 11.0, "scheduler_total": 7.0}
    rows = cost_compare.like_for_like({}, s3, inline)
    assert [r["scheduler"] for r in rows] == [7.0, 2.0]
    assert rows[1]["ratio"] == 3.0


def test_one_tenants_starts_are_capped_by_its_index_keys() -> None:
    caps = hour_top.tenant_caps(tenant_index_writes=1.0, runs_index_writes=2.0, runs_index_shards=8)
    assert caps == {"tenant index": 1_000.0, "runs index": 4_000.0}
    assert hour_top.tenant_caps(0.0, 0.0, 8) == {}


def test_api_gateway_admits_25_jobs_a_request_by_batch_create() -> None:
    api = hour_top.api_gateway(creates_per_day=50_000_000)
    assert api["average_per_s"] == pytest.approx(578.7, abs=0.1)
    assert api["jobs_per_s_batch"] == 25 * api["jobs_per_s_single"] == 250_000


def _section1(*, cron_wru: float | None) -> dict:
    create = {"dynamodb:PutItem job": {"table": 1.0, "tenant-index": 1.0, "due-index": 1.0}}
    # The job's completion (a peer's job put is priced as one write of the item and its tenant-index entry).
    execute = {"wru_per_run": {"dynamodb:UpdateItem job": {"table": 1.0, "tenant-index": 1.0}}}
    execute["per_run"] = {"dynamodb:UpdateItem job": 1.0}
    billable: dict = {"ahead": {"wru_per_run": 16.0, "s3_requests": 2.0}}
    if cron_wru is not None:
        billable["cron"] = {"wru_per_run": cron_wru, "s3_requests": 2.0}
    phases = {"create": {"wru_per_run": create}, "execute": execute}
    return {"scenarios": {"ahead": {"phases": phases}}, "billable": billable}


def test_a_cron_run_is_a_one_shot_without_its_create_until_section_1_measures_one() -> None:
    per_million = {"tickwork_total": 16.0, "scheduler_total": 10.0}
    derived = cost_compare.cron_per_million(_section1(cron_wru=None), per_million, 0.5, 30.0)
    assert derived["wru"] == 13.0  # 16 less the create's 3
    measured = cost_compare.cron_per_million(_section1(cron_wru=9.0), per_million, 0.5, 30.0)
    assert measured["wru"] == 9.0
    assert derived["tickwork"] - measured["tickwork"] == pytest.approx(4 * 0.625)
    assert measured["scheduler"] == derived["scheduler"] < 10.0
