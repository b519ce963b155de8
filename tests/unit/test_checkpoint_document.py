"""The handler's side of checkpoints (tickwork.jobtypes.durable), no AWS: the document's encoding, its limits, and
steps remembered within an attempt."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tickwork.jobtypes import CheckpointNotJSON, CheckpointTooLarge, RunContext
from tickwork.jobtypes.durable import InMemoryCheckpoints, RunCheckpoints, encode_checkpoint
from tickwork.model.clock import FakeClock


def _ctx(writer: InMemoryCheckpoints | None = None) -> RunContext:
    clock = FakeClock(datetime(2026, 1, 5, 12, tzinfo=UTC))
    checkpoints = RunCheckpoints(writer) if writer is not None else None
    return RunContext("run", "job", "t", 1, clock.now(), clock, checkpoints=checkpoints)  # type: ignore[arg-type]


def test_a_checkpoint_over_the_limit_names_its_size_and_the_limit():
    with pytest.raises(CheckpointTooLarge) as info:
        encode_checkpoint({"state": "x" * 100}, limit=50)
    assert (info.value.size, info.value.limit) == (len('{"state":"' + "x" * 100 + '"}'), 50)
    assert f"{info.value.size} bytes" in str(info.value)
    assert "limit of 50 bytes" in str(info.value)


@pytest.mark.parametrize("state", [{1, 2}, float("nan"), {"when": datetime(2026, 1, 1, tzinfo=UTC)}])
def test_a_state_json_cannot_hold_is_refused_and_nothing_is_saved(state):
    writer = InMemoryCheckpoints({"state": {"page": 1}, "steps": {}})
    ctx = _ctx(writer)
    with pytest.raises(CheckpointNotJSON, match="JSON-serialisable"):
        ctx.checkpoint(state)
    assert (writer.saves, ctx.last_checkpoint()) == (0, {"page": 1})


def test_the_last_checkpoint_is_the_state_as_json_holds_it():
    ctx = _ctx()
    assert ctx.last_checkpoint() is None
    ctx.checkpoint({"pages": (1, 2), 3: "three"})
    assert ctx.last_checkpoint() == {"pages": [1, 2], "3": "three"}


def test_a_step_is_called_once_and_keeps_the_state_beside_it():
    writer = InMemoryCheckpoints()
    ctx = _ctx(writer)
    calls = []
    ctx.checkpoint({"page": 4})
    assert ctx.step("charge", lambda: calls.append(1) or "charged") == "charged"
    assert ctx.step("charge", lambda: calls.append(1) or "again") == "charged"
    ctx.checkpoint({"page": 5})
    assert calls == [1]
    assert writer.document == {"state": {"page": 5}, "steps": {"charge": "charged"}}
    assert writer.saves == 3


def test_a_step_needs_a_name():
    with pytest.raises(ValueError, match="non-empty string"):
        _ctx().step("", lambda: 1)
