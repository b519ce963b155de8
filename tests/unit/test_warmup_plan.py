"""The warm-up before a burst (tickwork.model.warmup.plan_warmup): pure, from the runs due per coming second."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from tickwork.model.clock import to_ms
from tickwork.model.warmup import (
    ON_DEMAND_WRITE_UNITS,
    WarmCapacity,
    WarmEvent,
    WarmupPlan,
    WarmupPolicy,
    plan_warmup,
    runs_per_second,
)

NOW = datetime(2026, 11, 29, 11, 59, 0, 300000, tzinfo=UTC)
TOP = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
BOTH = WarmupPolicy(executor=True, table=True, max_environments=75, burst_runs=50)


def _second(instant: datetime) -> int:
    return to_ms(instant) // 1000


def test_the_runs_of_each_coming_second_are_counted_and_the_past_left_out() -> None:
    due = [to_ms(TOP)] * 3 + [to_ms(TOP) + 999, to_ms(TOP) + 1000, to_ms(NOW) - 1, to_ms(NOW)]
    assert runs_per_second(due, NOW) == {_second(TOP): 4, _second(TOP) + 1: 1}


def test_a_burst_ahead_asks_for_an_environment_per_batch_and_the_table_for_its_writes() -> None:
    plan = plan_warmup({_second(TOP): 400, _second(TOP) + 1: 20}, WarmCapacity(), BOTH)
    assert plan == WarmupPlan(burst_at=TOP, burst_runs=400, environments=40, table_write_units=5000)


def test_no_burst_asks_for_nothing() -> None:
    plan = plan_warmup({_second(TOP): 49, _second(TOP) + 1: 49}, WarmCapacity(), BOTH)
    assert plan == WarmupPlan()
    assert not plan.anything
    assert plan_warmup({}, WarmCapacity(), BOTH) == WarmupPlan()


def test_environments_warmed_already_and_a_table_warm_enough_are_not_asked_for_again() -> None:
    plan = plan_warmup({_second(TOP): 300}, WarmCapacity(environments=25, table_write_units=8000), BOTH)
    assert (plan.environments, plan.table_write_units) == (5, None)
    plan = plan_warmup({_second(TOP): 300}, WarmCapacity(environments=30, table_write_units=8000), BOTH)
    assert not plan.anything


def test_the_executor_is_never_warmed_past_its_concurrency() -> None:
    plan = plan_warmup({_second(TOP): 625_000}, WarmCapacity(), BOTH)
    assert plan.environments == 75
    assert plan.table_write_units == 7_500_000


def test_the_busiest_second_decides_and_the_earlier_of_two_as_busy() -> None:
    upcoming = {_second(TOP) + 60: 120, _second(TOP): 120, _second(TOP) + 30: 60}
    assert plan_warmup(upcoming, WarmCapacity(), BOTH).burst_at == TOP


def test_the_table_under_its_on_demand_start_is_left_alone() -> None:
    runs = ON_DEMAND_WRITE_UNITS // 12  # 333 runs, 3,996 write units
    assert plan_warmup({_second(TOP): runs}, WarmCapacity(), BOTH).table_write_units is None
    assert plan_warmup({_second(TOP): runs + 1}, WarmCapacity(), BOTH).table_write_units == 5000


@pytest.mark.parametrize(
    ("policy", "environments", "table"),
    [
        (WarmupPolicy(executor=True, table=False), 40, None),
        (WarmupPolicy(executor=False, table=True), 0, 5000),
        (WarmupPolicy(), 0, None),
    ],
)
def test_each_warm_up_is_asked_for_only_when_turned_on(
    policy: WarmupPolicy, environments: int, table: int | None
) -> None:
    plan = plan_warmup({_second(TOP): 400}, WarmCapacity(), policy)
    assert (plan.environments, plan.table_write_units) == (environments, table)


def test_a_warming_event_is_told_from_an_sqs_batch_and_its_hold_is_bounded() -> None:
    assert WarmEvent.of({"Records": []}) is None
    assert WarmEvent.of({"tickwork_warm": {"hold_ms": 200}}) == WarmEvent.model_validate(
        {"tickwork_warm": {"hold_ms": 200}}
    )
    with pytest.raises(ValidationError):
        WarmEvent.of({"tickwork_warm": {"hold_ms": 60_000}})
    assert WarmupPolicy().keep_warm == timedelta(minutes=5)


def test_a_dispatch_worker_warms_for_its_share_of_the_shards_and_one_warms_the_table() -> None:
    quarter = BOTH.for_share(0.25, table=True)
    assert (quarter.burst_runs, quarter.max_environments, quarter.write_units_per_run) == (13, 19, 48)
    plan = plan_warmup({_second(TOP): 100}, WarmCapacity(), quarter)  # a quarter of a 400-run second
    assert (plan.environments, plan.table_write_units) == (10, 5000)
    assert not BOTH.for_share(0.25, table=False).table
    assert BOTH.for_share(1.0, table=True) == BOTH
