"""Retry delays: exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter")."""

from __future__ import annotations

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
    """Full jitter: uniform in [0, ceiling], whole seconds (SQS visibility is in seconds), at least 1."""
    source = rng or random
    return max(1, round(source.random() * backoff_ceiling(policy, attempt)))
