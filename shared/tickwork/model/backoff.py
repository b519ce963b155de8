"""Retry delays: exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter").

Delays are whole seconds (SQS's DelaySeconds and visibility are), rounded down so that none exceeds the job's
`max_backoff_seconds`: the smallest delay is 0 s (the retry is sent at once), and a cap under 1 s means every
retry is."""

from __future__ import annotations

import math
import random
from typing import Protocol

from tickwork.model.policies import RetryPolicy


class Random(Protocol):
    def random(self) -> float: ...


def backoff_ceiling(policy: RetryPolicy, attempt: int) -> float:
    """The largest delay after failed attempt number `attempt` (1-based): base * 2^(attempt-1), capped."""
    exponent = min(max(attempt - 1, 0), 62)
    return float(min(policy.max_backoff_seconds, policy.backoff_seconds * (2**exponent)))


def backoff_seconds(policy: RetryPolicy, attempt: int, rng: Random | None = None) -> int:
    """Full jitter: uniform in [0, ceiling], in whole seconds rounded down (never past the ceiling)."""
    source = rng or random
    return math.floor(source.random() * backoff_ceiling(policy, attempt))


def wait_within_cap(policy: RetryPolicy, seconds: float) -> int:
    """A wait another party asked for (a Retry-After), in whole seconds: rounded up, but never past the cap."""
    return min(math.ceil(seconds), math.floor(policy.max_backoff_seconds))
