from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tickwork.model.backoff import backoff_ceiling, backoff_seconds, wait_within_cap
from tickwork.model.clock import from_ms
from tickwork.model.jitter import jitter_offset_ms
from tickwork.model.policies import RetryPolicy


class Fixed:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def test_ceiling_doubles_then_caps() -> None:
    policy = RetryPolicy(backoff_seconds=2, max_backoff_seconds=60)
    assert [backoff_ceiling(policy, n) for n in range(1, 8)] == [2, 4, 8, 16, 32, 60, 60]


@given(
    attempt=st.integers(1, 200),
    base=st.floats(0.1, 100),
    cap=st.floats(100, 43200),
    seed=st.integers(0, 2**32),
)
def test_full_jitter_stays_within_the_ceiling(attempt: int, base: float, cap: float, seed: int) -> None:
    policy = RetryPolicy(backoff_seconds=base, max_backoff_seconds=cap)
    delay = backoff_seconds(policy, attempt, random.Random(seed))
    assert 0 <= delay <= backoff_ceiling(policy, attempt) <= cap


def test_jitter_spreads_delays() -> None:
    policy = RetryPolicy(backoff_seconds=10, max_backoff_seconds=900)
    rng = random.Random(7)
    delays = {backoff_seconds(policy, 5, rng) for _ in range(50)}
    assert len(delays) > 20  # not a thundering herd


@pytest.mark.parametrize(("fraction", "expected"), [(0.0, 0), (0.5, 8), (0.99, 15), (1.0, 16)])
def test_delay_is_the_drawn_fraction_of_the_ceiling(fraction: float, expected: int) -> None:
    assert backoff_seconds(RetryPolicy(backoff_seconds=2), 4, Fixed(fraction)) == expected


_POLICIES = st.builds(
    lambda base, extra, attempts: RetryPolicy(
        max_attempts=attempts, backoff_seconds=base, max_backoff_seconds=min(43200, base + extra)
    ),
    base=st.floats(0.001, 3600),
    extra=st.one_of(st.floats(0, 1), st.floats(0, 43200)),
    attempts=st.integers(1, 100),
)


@given(policy=_POLICIES, attempt=st.integers(1, 200), fraction=st.floats(0, 1, exclude_max=True))
def test_retry_delay_never_exceeds_max_backoff(policy: RetryPolicy, attempt: int, fraction: float) -> None:
    """Whole seconds (SQS's), rounded down within the cap: a cap of 10.6 s never gives 11 s, a cap under 1 s
    gives 0 s (the retry at once); and the draw stays within its range, [0, the attempt's ceiling]."""
    delay = backoff_seconds(policy, attempt, Fixed(fraction))
    assert isinstance(delay, int)
    assert 0 <= delay <= policy.max_backoff_seconds
    assert delay <= backoff_ceiling(policy, attempt)
    assert delay == math.floor(fraction * backoff_ceiling(policy, attempt))


@pytest.mark.parametrize(("cap", "fraction", "expected"), [(10.6, 0.999, 10), (0.5, 0.999, 0), (0.001, 0.5, 0)])
def test_a_fractional_cap_is_never_rounded_past(cap: float, fraction: float, expected: int) -> None:
    policy = RetryPolicy(backoff_seconds=min(cap, 2), max_backoff_seconds=cap)
    assert backoff_seconds(policy, 10, Fixed(fraction)) == expected


@given(policy=_POLICIES, wait=st.floats(0, 100_000))
def test_a_retry_after_wait_is_whole_seconds_within_the_cap(policy: RetryPolicy, wait: float) -> None:
    waited = wait_within_cap(policy, wait)
    assert 0 <= waited <= policy.max_backoff_seconds
    assert waited >= wait or waited == math.floor(policy.max_backoff_seconds)


@given(
    job=st.text(min_size=1, max_size=30), at_ms=st.integers(0, 4_102_444_800_000), jitter=st.integers(0, 366 * 86400)
)
def test_job_jitter_stays_within_its_range(job: str, at_ms: int, jitter: int) -> None:
    offset = jitter_offset_ms(job, from_ms(at_ms), jitter)
    assert 0 <= offset < max(1, jitter * 1000)
