"""The fan-out's slices (tickwork.tick.fanout): every shard in exactly one slice; stale slices; bad slices refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tickwork.model.messages import DispatchSlice
from tickwork.settings import Settings as TickworkSettings
from tickwork.tick.fanout import DispatchCoordinator, slices_for

from tests.unit.test_settings_and_models import BASE

TICK = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@settings(deadline=None)
@given(workers=st.integers(1, 1000), shards=st.integers(1, 1000))
def test_the_slices_cover_every_shard_exactly_once(workers: int, shards: int) -> None:
    slices = slices_for(workers, shards, TICK)
    assert len(slices) == min(workers, shards)  # never an empty slice
    covered = [s for piece in slices for s in piece.shards(shards)]
    assert sorted(covered) == list(range(shards))
    assert all(piece.shards(shards) for piece in slices)


def test_a_slice_is_stale_once_the_next_tick_has_replaced_it() -> None:
    (piece,) = slices_for(1, 8, TICK)
    period = timedelta(seconds=60)
    assert not piece.stale(TICK + timedelta(seconds=59, milliseconds=999), period)
    assert piece.stale(TICK + period, period)


def test_a_slice_survives_its_message_round_trip() -> None:
    piece = slices_for(3, 8, TICK)[2]
    assert DispatchSlice.model_validate_json(piece.model_dump_json()) == piece
    assert piece.shards(8) == [2, 5]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tick_at": "2026-11-23T12:00:00Z", "worker": 3, "workers": 3}, "worker must be below workers"),
        ({"tick_at": "2026-11-23T12:00:00", "worker": 0, "workers": 3}, "tick_at"),
        ({"tick_at": "2026-11-23T12:00:00Z", "worker": 0, "workers": 0}, "workers"),
        ({"tick_at": "2026-11-23T12:00:00Z", "worker": 0, "workers": 2, "shards": [1]}, "shards"),
    ],
)
def test_a_bad_slice_is_refused_naming_what_is_wrong(body: dict, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        DispatchSlice.model_validate(body)
    assert field in str(info.value)


def test_fan_out_without_its_queue_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValidationError, match="DISPATCH_QUEUE_URL must be set"):
        TickworkSettings.from_env({**BASE, "DISPATCH_WORKERS": "4"})
    assert (
        TickworkSettings.from_env(
            {**BASE, "DISPATCH_WORKERS": "4", "DISPATCH_QUEUE_URL": "http://q/d"}
        ).dispatch_workers
        == 4
    )
    assert TickworkSettings.from_env({**BASE, "DISPATCH_QUEUE_URL": ""}).dispatch_queue_url is None


class _Recorded:
    def __init__(self, accept: int | None = None) -> None:
        self.requests: list[list[DispatchSlice]] = []
        self.accept = accept

    def send_slices(self, slices):  # type: ignore[no-untyped-def]
        self.requests.append(list(slices))
        return len(slices) if self.accept is None else min(self.accept, len(slices))


class _Clock:
    def now(self) -> datetime:
        return TICK


def test_the_coordinator_sends_ten_slices_a_request_and_counts_what_sqs_took() -> None:
    queue = _Recorded()
    assert DispatchCoordinator(queue, _Clock(), workers=25, shards=64).hand_out() == 25
    assert [len(r) for r in queue.requests] == [10, 10, 5]
    assert {s.tick_at for r in queue.requests for s in r} == {TICK}
    refused = _Recorded(accept=7)
    assert DispatchCoordinator(refused, _Clock(), workers=12, shards=64).hand_out() == 7 + 2
