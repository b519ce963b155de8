"""The fair-share allocator (tickwork.tick.fairness): weights, band order, aging, rate budgets, and no change when
nothing is held back."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tickwork.model.tenant_settings import rate_window
from tickwork.settings import Settings
from tickwork.tick.fairness import Candidate, HoldReason, allocate, effective_band_rank, held_by_quota

NOW = 1_000_000_000
AGING = 300_000
HOUR = 3_600_000


def flood(tenant: str, n: int, *, priority: int = 5, due_at: int = NOW, cost: int = 0) -> list[Candidate[str]]:
    return [Candidate(f"{tenant}-{i}", tenant, priority, due_at + i, urgent=True, cost=cost) for i in range(n)]


def run(candidates, capacity, weights=None, budgets=None, aging=AGING):  # type: ignore[no-untyped-def]
    return allocate(
        candidates, capacity=capacity, weights=weights or {}, budgets=budgets or {}, now_ms=NOW, aging_after_ms=aging
    )


def test_weights_three_to_one_under_saturation_share_the_slots_three_to_one() -> None:
    items = flood("a", 1000) + flood("b", 1000)
    result = run(items, 400, weights={"a": 3, "b": 1})
    shares = result.shares()
    assert shares["a"] + shares["b"] == 400
    assert 2.7 <= shares["a"] / shares["b"] <= 3.3
    assert result.held["a"][HoldReason.CAPACITY] == 1000 - shares["a"]
    assert result.held["b"][HoldReason.CAPACITY] == 1000 - shares["b"]


def test_a_light_tenant_gets_all_it_asks_for_beside_a_flood() -> None:
    items = flood("a", 600) + flood("b", 20, due_at=NOW + 10_000)  # b's items are the youngest
    result = run(items, 100)
    assert result.shares()["b"] == 20
    assert "b" not in result.held


def test_bands_keep_their_order_whatever_the_weights() -> None:
    items = flood("a", 50, priority=8) + flood("b", 50, priority=1)
    result = run(items, 60, weights={"b": 100})
    assert result.shares() == Counter({"a": 50, "b": 10})
    assert [a.candidate.priority for a in result.chosen] == [8] * 50 + [1] * 10


def test_must_go_now_comes_before_look_ahead_of_a_higher_band() -> None:
    ahead = [Candidate("ahead", "a", 9, NOW + 90_000, urgent=False)]
    now = [Candidate(f"now-{i}", "b", 1, NOW, urgent=True) for i in range(3)]
    result = run(ahead + now, 3)
    assert [a.item for a in result.chosen] == ["now-0", "now-1", "now-2"]
    assert result.held["a"][HoldReason.CAPACITY] == 1


def test_aging_lifts_a_starving_low_item_within_the_configured_time() -> None:
    high = flood("a", 100, priority=9)
    fresh_low = Candidate("low", "b", 0, NOW - AGING, urgent=True)  # overdue by exactly the aging time: not yet
    assert "low" not in [a.item for a in run([*high, fresh_low], 50).chosen]
    aged_once = Candidate("low", "b", 0, NOW - AGING - 1, urgent=True)
    assert effective_band_rank(aged_once, now_ms=NOW, aging_after_ms=AGING) == 1  # normal: still behind high
    aged_twice = Candidate("low", "b", 0, NOW - 2 * AGING - 1, urgent=True)
    chosen = run([*high, aged_twice], 50).chosen
    assert "low" in [a.item for a in chosen]
    # Only its class changed: its priority (band, queue) is still low.
    assert next(a.candidate.priority for a in chosen if a.item == "low") == 0


def test_aging_never_lifts_above_high_and_is_off_when_zero() -> None:
    ancient = Candidate("x", "a", 0, NOW - 10 * HOUR, urgent=True)
    assert effective_band_rank(ancient, now_ms=NOW, aging_after_ms=AGING) == 2
    assert effective_band_rank(ancient, now_ms=NOW, aging_after_ms=0) == 0


def test_a_rate_budget_caps_a_tenant_and_its_slots_go_to_others() -> None:
    items = flood("a", 30, cost=1) + flood("b", 30, cost=1)
    result = run(items, 40, budgets={"a": 10})
    assert result.shares() == Counter({"a": 10, "b": 30})
    assert result.held["a"] == Counter({HoldReason.TENANT_RATE: 20})
    assert sum(a.max_runs or 0 for a in result.chosen if a.candidate.tenant == "a") == 10


def test_a_budget_caps_an_item_that_would_dispatch_several_runs() -> None:
    items = [Candidate("every-second", "a", 5, NOW, urgent=True, cost=60)]
    result = run(items, 10, budgets={"a": 10})
    assert [a.max_runs for a in result.chosen] == [10]


def test_recovery_items_are_not_held_by_a_spent_budget() -> None:
    resend = Candidate("resend", "a", 5, NOW, urgent=True, cost=0)
    result = run([resend, *flood("a", 3, cost=1)], 10, budgets={"a": 0})
    assert [a.item for a in result.chosen] == ["resend"]
    assert result.held["a"] == Counter({HoldReason.TENANT_RATE: 3})


def test_a_budget_within_demand_changes_nothing() -> None:
    items = flood("a", 5, cost=1)
    result = run(items, 10, budgets={"a": 5})
    assert [a.item for a in result.chosen] == [c.item for c in items]
    assert [a.max_runs for a in result.chosen] == [1] * 5
    assert result.held == {}


candidate_lists = st.lists(
    st.builds(
        Candidate,
        item=st.integers(),
        tenant=st.sampled_from(["a", "b", "c"]),
        priority=st.integers(0, 9),
        due_at_ms=st.integers(NOW - HOUR, NOW + 120_000),
        urgent=st.booleans(),
        cost=st.integers(0, 3),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(candidate_lists)
def test_no_cut_is_todays_order(candidates: list[Candidate[int]]) -> None:
    result = run(candidates, len(candidates), weights={"a": 5, "b": 2})
    today = sorted(candidates, key=lambda c: (not c.urgent, -c.priority, c.due_at_ms))
    assert [a.candidate for a in result.chosen] == today
    assert result.held == {}


@settings(max_examples=150, deadline=None)
@given(
    candidate_lists,
    st.integers(0, 70),
    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(1, 100)),
    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 10)),
)
def test_every_item_is_chosen_or_held_once_within_capacity_and_budgets(
    candidates: list[Candidate[int]], capacity: int, weights: dict[str, int], budgets: dict[str, int]
) -> None:
    result = run(candidates, capacity, weights=weights, budgets=budgets)
    assert len(result.chosen) <= capacity
    assert len(result.chosen) + sum(result.held_by_reason.values()) == len(candidates)
    assert Counter(id(a.candidate) for a in result.chosen).most_common(1)[0][1] == 1 if result.chosen else True
    for tenant, budget in budgets.items():
        assert sum(a.max_runs or 0 for a in result.chosen if a.candidate.tenant == tenant) <= budget
    # Capacity is never left idle while an item that fits its budget waits.
    if len(result.chosen) < capacity:
        assert all(set(reasons) == {HoldReason.TENANT_RATE} for reasons in result.held.values())


def test_aging_after_seconds_is_a_validated_setting() -> None:
    base = {
        "TABLE_NAME": "jobs",
        "RESULTS_BUCKET": "results",
        **{f"{q}_URL_{b}": "u" for q in ("QUEUE", "DLQ") for b in ("HIGH", "NORMAL", "LOW")},
    }
    assert Settings.from_env(base).aging_after_seconds == 300
    assert Settings.from_env({**base, "AGING_AFTER_SECONDS": "0"}).aging_after_seconds == 0
    with pytest.raises(ValidationError, match="AGING_AFTER_SECONDS"):
        Settings.from_env({**base, "AGING_AFTER_SECONDS": "-1"})


def test_a_quota_holds_back_only_what_waited_through_a_spent_window() -> None:
    """Having a quota is not being held back by it: only a window spent between the job's due time and now's
    window says its lateness is the quota's."""
    now = datetime(2026, 6, 1, 12, 10, 30, tzinfo=UTC)
    due = now - timedelta(minutes=10)
    assert not held_by_quota(due, now, spent_windows=set())  # an outage: no window spent
    assert held_by_quota(due, now, spent_windows={rate_window(now) - 1})
    assert held_by_quota(due, now, spent_windows={rate_window(due)})
    assert not held_by_quota(due, now, spent_windows={rate_window(due) - 1})  # before it was due
    assert not held_by_quota(due, now, spent_windows={rate_window(now)})  # now's own: this tick's reservation


# ---------------------------------------------------------------- earliest deadline first


def _with_deadline(item: str, tenant: str, deadline_s: int | None, *, priority: int = 5) -> Candidate[str]:
    deadline = None if deadline_s is None else NOW + deadline_s * 1000
    return Candidate(item, tenant, priority, NOW, urgent=True, deadline_at_ms=deadline)


def test_held_back_within_a_band_the_least_slack_goes_first() -> None:
    items = [
        _with_deadline("none", "a", None, priority=6),
        _with_deadline("late", "a", 3600),
        _with_deadline("soon", "a", 60, priority=3),
        _with_deadline("middle", "a", 600),
    ]
    assert [a.item for a in run(items, 2).chosen] == ["soon", "middle"]
    assert [a.item for a in run(items, 4).chosen] == ["soon", "middle", "late", "none"]


def test_a_deadline_does_not_jump_its_band() -> None:
    items = [_with_deadline("normal-soon", "a", 10), _with_deadline("high-none", "a", None, priority=8)]
    assert [a.item for a in run(items, 1).chosen] == ["high-none"]


def test_earliest_deadline_first_stays_within_fair_share() -> None:
    """Tenant a's deadlines are all sooner than b's: a still gets only its share, its soonest first."""
    items = [_with_deadline(f"a{i}", "a", 60 + i) for i in range(4)] + [
        _with_deadline(f"b{i}", "b", 6000 + i) for i in range(4)
    ]
    chosen = [a.item for a in run(items, 4).chosen]
    assert sorted(chosen) == ["a0", "a1", "b0", "b1"]


def test_shortest_first_claims_the_shortest_expected_runs_of_a_band_when_not_all_fit() -> None:
    lengths = {"long": 60_000, "mid": 5_000, "short": 1_000, "unknown": None}
    items = [
        Candidate(name, "t", 5, NOW + i, urgent=True, shortest_first=True, expected_ms=ms)
        for i, (name, ms) in enumerate(lengths.items())
    ]
    assert [a.item for a in run(items, 2).chosen] == ["short", "mid"]
    assert [a.item for a in run(items, 4).chosen] == ["short", "mid", "long", "unknown"]  # no forecast: last


def test_shortest_first_stays_within_its_band_and_beside_a_deadline_compares_its_expected_end() -> None:
    high_long = Candidate("high-long", "t", 8, NOW, urgent=True, shortest_first=True, expected_ms=60_000)
    low_short = Candidate("low-short", "t", 2, NOW, urgent=True, shortest_first=True, expected_ms=10)
    deadline = Candidate("deadline-in-30s", "t", 5, NOW, urgent=True, deadline_at_ms=NOW + 30_000)
    short = Candidate("ends-in-1s", "t", 5, NOW, urgent=True, shortest_first=True, expected_ms=1_000)
    long = Candidate("ends-in-60s", "t", 5, NOW, urgent=True, shortest_first=True, expected_ms=60_000)
    chosen = run([low_short, long, deadline, short, high_long], 5).chosen
    assert [a.item for a in chosen] == ["high-long", "ends-in-1s", "deadline-in-30s", "ends-in-60s", "low-short"]


def test_in_the_dispatch_order_simulation_shortest_first_waits_least_on_average() -> None:
    from benchmarks import dispatch_order

    orders = dispatch_order.measure()["orders"]
    assert orders["sjf"]["mean_wait_s"] < orders["fifo"]["mean_wait_s"]
    assert orders["sjf"]["mean_wait_s"] < orders["edf"]["mean_wait_s"]
