"""A manual run's instant: now, or the next free millisecond when a trigger in the same millisecond took it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tickwork.model.errors import Conflict
from tickwork.model.ids import MANUAL_TRIGGER_TRIES, on_a_free_millisecond

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def test_a_manual_run_starts_now_when_now_is_free() -> None:
    assert on_a_free_millisecond(NOW, lambda at: at) == NOW


def test_a_manual_run_takes_the_next_free_millisecond() -> None:
    taken = {NOW, NOW + timedelta(milliseconds=1)}
    assert on_a_free_millisecond(NOW, lambda at: None if at in taken else at) == NOW + timedelta(milliseconds=2)


def test_too_many_triggers_in_the_same_milliseconds_is_a_conflict() -> None:
    tried: list[datetime] = []

    def all_taken(at: datetime) -> None:
        tried.append(at)

    with pytest.raises(Conflict):
        on_a_free_millisecond(NOW, all_taken)
    assert tried == [NOW + timedelta(milliseconds=k) for k in range(MANUAL_TRIGGER_TRIES)]
