"""LimitRecords against moto: the semaphore's version race, expired holders, and GCRA's exact waits."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tickwork.model.clock import to_ms
from tickwork.store import LimitRecords, rate_sort, semaphore_sort

from tests.harness import START

KEY = semaphore_sort("stripe")
LEASE = timedelta(seconds=60)


@pytest.fixture
def limits(pipeline) -> LimitRecords:
    return LimitRecords(pipeline.services.store.shared_table)


class StaleReads:
    """A client whose first GetItem answers as if the item did not exist yet (another executor wrote it since)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.stale = 1

    def get_item(self, **kwargs: Any) -> dict[str, Any]:
        if self.stale:
            self.stale -= 1
            return {}
        return self._client.get_item(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _acquire_after_a_stale_read(pipeline: Any, limits: LimitRecords, *, holder: str, limit: int) -> bool:
    table = pipeline.services.store.shared_table
    real = table.client
    table.client = StaleReads(real)
    try:
        return limits.acquire("acme", KEY, holder=holder, limit=limit, until=START + LEASE, now=START)
    finally:
        table.client = real


def test_a_lost_race_is_retried_from_the_item_the_condition_saw_and_loses_no_holder(pipeline, limits):
    assert limits.acquire("acme", KEY, holder="a", limit=2, until=START + LEASE, now=START)
    pipeline.calls.clear()
    assert _acquire_after_a_stale_read(pipeline, limits, holder="b", limit=2)
    assert limits.holders("acme", KEY) == {"a": to_ms(START + LEASE), "b": to_ms(START + LEASE)}
    assert pipeline.calls.count("PutItem") == 2  # the lost put, then the one from the item it returned


def test_a_lost_race_that_fills_the_semaphore_refuses(pipeline, limits):
    assert limits.acquire("acme", KEY, holder="a", limit=1, until=START + LEASE, now=START)
    assert not _acquire_after_a_stale_read(pipeline, limits, holder="b", limit=1)
    assert set(limits.holders("acme", KEY)) == {"a"}


def test_an_expired_holder_is_dropped_and_a_released_one_frees_its_slot(limits):
    assert limits.acquire("acme", KEY, holder="dead", limit=1, until=START + LEASE, now=START)
    assert not limits.acquire("acme", KEY, holder="b", limit=1, until=START + 2 * LEASE, now=START + LEASE)
    later = START + LEASE + timedelta(milliseconds=1)
    assert limits.acquire("acme", KEY, holder="b", limit=1, until=later + LEASE, now=later)
    assert set(limits.holders("acme", KEY)) == {"b"}  # the dead holder is gone from the map
    limits.release("acme", KEY, holder="b")
    assert limits.holders("acme", KEY) == {}
    assert not limits.extend("acme", KEY, holder="b", until=later + 2 * LEASE)  # released: nothing to extend


def test_tenants_keys_are_apart(limits):
    assert limits.acquire("acme", KEY, holder="a", limit=1, until=START + LEASE, now=START)
    assert limits.acquire("globex", KEY, holder="g", limit=1, until=START + LEASE, now=START)
    assert limits.holders("globex", KEY) == {"g": to_ms(START + LEASE)}


def test_gcra_admits_one_per_interval_and_says_the_exact_wait(limits):
    sort = rate_sort("sms")
    assert limits.admit_rate("acme", sort, interval_ms=10_000, now=START).admitted
    refused = limits.admit_rate("acme", sort, interval_ms=10_000, now=START + timedelta(seconds=4))
    assert (refused.admitted, refused.wait_ms) == (False, 6_000)
    assert limits.admit_rate("acme", sort, interval_ms=10_000, now=START + timedelta(seconds=10)).admitted
    # After a quiet spell no burst builds up: the next admitted run moves the turn one interval on again.
    quiet = START + timedelta(hours=1)
    assert limits.admit_rate("acme", sort, interval_ms=10_000, now=quiet).admitted
    assert not limits.admit_rate("acme", sort, interval_ms=10_000, now=quiet).admitted


def test_a_key_shared_with_different_limits_holds_each_runs_own_limit(limits):
    """The smallest limit among the runs inside and the one asking wins: no run is ever inside with more runs
    than its own job declared."""
    until = START + LEASE
    assert limits.acquire("acme", KEY, holder="strict", limit=1, until=until, now=START)
    assert not limits.acquire("acme", KEY, holder="loose-1", limit=5, until=until, now=START)  # beside strict's 1
    limits.release("acme", KEY, holder="strict")
    assert limits.acquire("acme", KEY, holder="loose-1", limit=5, until=until, now=START)
    assert limits.acquire("acme", KEY, holder="pair-1", limit=2, until=until, now=START)
    assert not limits.acquire("acme", KEY, holder="loose-2", limit=5, until=until, now=START)  # pair-1's 2
    assert not limits.acquire("acme", KEY, holder="strict", limit=1, until=until, now=START)
    limits.release("acme", KEY, holder="pair-1")
    assert limits.acquire("acme", KEY, holder="loose-2", limit=5, until=until, now=START)
    assert set(limits.holders("acme", KEY)) == {"loose-1", "loose-2"}
    # A holder whose hold ended (a crashed run) no longer imposes its limit.
    assert limits.acquire("acme", KEY, holder="pair-2", limit=2, until=START + 3 * LEASE, now=START + 2 * LEASE)


def test_a_rate_tat_written_by_a_clock_far_ahead_holds_the_key_back_an_interval_at_most(limits):
    sort = rate_sort("sms")
    ahead = START + timedelta(hours=1)  # executor A's clock, an hour fast
    assert limits.admit_rate("acme", sort, interval_ms=10_000, now=ahead).admitted
    refused = limits.admit_rate("acme", sort, interval_ms=10_000, now=START)  # executor B, on time
    assert (refused.admitted, refused.wait_ms) == (False, 10_000)  # not an hour
    assert not limits.admit_rate("acme", sort, interval_ms=10_000, now=START + timedelta(seconds=9)).admitted
    assert limits.admit_rate("acme", sort, interval_ms=10_000, now=START + timedelta(seconds=10)).admitted


def test_a_rate_tat_within_the_clock_skew_allowed_is_honoured(limits):
    from tickwork.store.limits import MAX_CLOCK_SKEW_MS

    sort = rate_sort("sms")
    ahead = START + timedelta(milliseconds=MAX_CLOCK_SKEW_MS)
    assert limits.admit_rate("acme", sort, interval_ms=10_000, now=ahead).admitted
    refused = limits.admit_rate("acme", sort, interval_ms=10_000, now=START)
    assert (refused.admitted, refused.wait_ms) == (False, 10_000 + MAX_CLOCK_SKEW_MS)
