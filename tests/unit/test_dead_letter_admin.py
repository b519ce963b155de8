"""The SQS dead-letter queues' redrive decides per band (tickwork.control.dead_letters): a queue with messages is
moved, an empty one is left, one whose earlier move is still running is left too (SQS moves one task per queue at
a time), and a redrive that starts nothing is a Conflict saying why. No AWS: the queues are a stand-in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tickwork.aws.dead_letters import DeadLetterQueue, MoveTask, RedriveRunning
from tickwork.control.dead_letters import DeadLetterAdmin
from tickwork.model.errors import Conflict
from tickwork.model.policies import Band

T0 = datetime(2026, 11, 21, 12, tzinfo=UTC)


class Queues:
    def __init__(self, messages: dict[Band, int], running: set[Band] = frozenset(), racing: set[Band] = frozenset()):
        self.messages, self.running, self.racing = messages, running, racing
        self.moved: list[Band] = []

    def read(self, band: Band) -> DeadLetterQueue:
        task = MoveTask("RUNNING", 1, 5, T0) if band in self.running else None
        return DeadLetterQueue(band, self.messages.get(band, 0), 0, task)

    def redrive(self, band: Band) -> None:
        if band in self.racing:  # another admin's move started since the read
            raise RedriveRunning(band.value)
        self.moved.append(band)


def test_each_band_is_moved_left_empty_or_left_running():
    queues = Queues({Band.HIGH: 2, Band.NORMAL: 3}, running={Band.NORMAL})
    report = DeadLetterAdmin(queues).redrive([Band.HIGH, Band.NORMAL, Band.LOW, Band.HIGH])  # type: ignore[arg-type]
    assert (report.started, report.empty, report.running) == ([Band.HIGH], [Band.LOW], [Band.NORMAL])
    assert queues.moved == [Band.HIGH]  # once, though named twice


def test_a_move_started_by_someone_else_meanwhile_counts_as_running():
    queues = Queues({Band.HIGH: 2, Band.LOW: 1}, racing={Band.LOW})
    report = DeadLetterAdmin(queues).redrive([Band.HIGH, Band.LOW])  # type: ignore[arg-type]
    assert (report.started, report.running) == ([Band.HIGH], [Band.LOW])


def test_nothing_started_is_a_conflict_saying_why():
    with pytest.raises(Conflict, match="nothing to redrive"):
        DeadLetterAdmin(Queues({})).redrive(list(Band))  # type: ignore[arg-type]
    with pytest.raises(Conflict, match="moving its messages still"):
        DeadLetterAdmin(Queues({Band.LOW: 4}, running={Band.LOW})).redrive([Band.LOW])  # type: ignore[arg-type]
