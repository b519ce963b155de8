"""The heartbeat's look for a cancellation between beats (overlap CANCEL_OTHER): when it looks, what a failed
look does, and that a run of any other policy never looks; and its extending everything that admitted the run."""

from __future__ import annotations

import threading
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from tickwork.executor.admission import Held
from tickwork.executor.delivery import Delivery
from tickwork.executor.heartbeat import Heartbeat
from tickwork.model.clock import FakeClock

from tests.unit.test_admission_gates import Recorder, RunKeyed


class FlakyRuns:
    def __init__(self) -> None:
        self.looks = 0
        self.fail_next = False
        self.requested = False

    def extend_lease(self, run_id: str, **_: object) -> Any:
        return SimpleNamespace(held=True, cancel_requested=False)

    def cancel_requested(self, run_id: str) -> bool:
        self.looks += 1
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("throttled")
        return self.requested


def _heartbeat(
    cancel_poll: timedelta | None, held: Held | None = None
) -> tuple[Heartbeat, FakeClock, FlakyRuns, threading.Event]:
    clock = FakeClock()
    runs = FlakyRuns()
    cancelled = threading.Event()
    heartbeat = Heartbeat(
        runs,  # type: ignore[arg-type]
        SimpleNamespace(change_visibility=lambda *_: None),  # type: ignore[arg-type]
        clock,
        run_id="r",
        owner="me",
        delivery=Delivery(body="{}", message_id="m", receipt_handle="h", queue_url="q"),
        lease_for=timedelta(seconds=60),
        cancelled=cancelled,
        cancel_poll=cancel_poll,
        held=held,
    )
    return heartbeat, clock, runs, cancelled


def test_it_looks_once_a_poll_interval_and_cancels_when_asked():
    heartbeat, clock, runs, cancelled = _heartbeat(timedelta(seconds=1))
    heartbeat.maybe_beat()
    assert runs.looks == 0  # not a second yet
    clock.advance(1)
    heartbeat.maybe_beat()
    heartbeat.maybe_beat()
    assert runs.looks == 1
    runs.requested = True
    clock.advance(1)
    heartbeat.maybe_beat()
    assert cancelled.is_set()
    assert heartbeat.cancel_requested
    clock.advance(1)
    heartbeat.maybe_beat()
    assert runs.looks == 2  # asked once is enough


def test_a_failed_look_neither_fails_the_run_nor_cancels_it_and_the_next_look_happens():
    heartbeat, clock, runs, cancelled = _heartbeat(timedelta(seconds=1))
    runs.fail_next = True
    runs.requested = True
    clock.advance(1)
    heartbeat.maybe_beat()  # no exception reaches the handler's thread
    assert not cancelled.is_set()
    clock.advance(1)
    heartbeat.maybe_beat()
    assert cancelled.is_set()
    assert runs.looks == 2


def test_without_a_poll_it_never_looks_between_beats():
    heartbeat, clock, runs, cancelled = _heartbeat(None)
    runs.requested = True
    for _ in range(10):
        clock.advance(1)
        heartbeat.maybe_beat()
    assert runs.looks == 0
    assert not cancelled.is_set()


def test_the_heartbeat_extends_every_hold_and_stops_the_run_when_any_is_lost():
    for lost_one in ("slot", "key"):
        log: list[str] = []
        held = Held([RunKeyed("slot", log, lost=lost_one == "slot"), Recorder("key", log, lost=lost_one == "key")])
        heartbeat, clock, _, cancelled = _heartbeat(None, held)
        clock.advance(20)
        heartbeat.maybe_beat()
        assert log == ["extend slot", "extend key"]
        assert heartbeat.hold_lost == lost_one
        assert cancelled.is_set()
        assert not heartbeat.lost  # the lease itself is still its own


def test_the_heartbeat_of_a_run_holding_everything_cancels_nothing():
    log: list[str] = []
    heartbeat, clock, _, cancelled = _heartbeat(None, Held([RunKeyed("slot", log), Recorder("key", log)]))
    clock.advance(20)
    heartbeat.maybe_beat()
    assert heartbeat.beats == 1
    assert heartbeat.hold_lost is None
    assert not cancelled.is_set()
