from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tickwork.model.backoff import backoff_ceiling, backoff_seconds
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
def test_full_jitter_stays_within_one_second_and_the_ceiling(attempt: int, base: float, cap: float, seed: int) -> None:
    policy = RetryPolicy(backoff_seconds=base, max_backoff_seconds=cap)
    delay = backoff_seconds(policy, attempt, random.Random(seed))
    assert 1 <= delay <= max(1, round(backoff_ceiling(policy, attempt)))
    assert delay <= cap + 1


def test_jitter_spreads_delays() -> None:
    policy = RetryPolicy(backoff_seconds=10, max_backoff_seconds=900)
    rng = random.Random(7)
    delays = {backoff_seconds(policy, 5, rng) for _ in range(50)}
    assert len(delays) > 20  # not a thundering herd


@pytest.mark.parametrize(("fraction", "expected"), [(0.0, 1), (0.5, 8), (1.0, 16)])
def test_delay_is_the_drawn_fraction_of_the_ceiling(fraction: float, expected: int) -> None:
    assert backoff_seconds(RetryPolicy(backoff_seconds=2), 4, Fixed(fraction)) == expected
