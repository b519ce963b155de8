"""The executor's admission: after the lease and before the handler, each gate (held back or the breaker's probe,
attempts, overlap, limits) answers in one shape: admit (with what it holds), skip, defer or fail.

The gates run in order and the first answer that is not an admit stops them; what the earlier gates admitted is
given back before that answer is recorded, so a refused run holds nothing. An admitted run's holds are extended
with its lease by the heartbeat (one `extend` each) and given back in one place when the run ends. A yielded run
(docs/durable-runs.md) has not ended: its running slot and its ordering key's turn are carried to its next segment
(`carry`), which its gates recognise as their holder, and given back when it ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import ClassVar, Protocol

from tickwork.model.run import Run, RunError
from tickwork.model.run_target import RunTarget
from tickwork.model.states import DeferReason, SkipReason


class Hold(Protocol):
    """Something an admitted run holds until its lease ends (a running slot, concurrency slots)."""

    # Held under the run's id, which an executor that takes the run over holds too: one that lost its lease
    # leaves it to that executor rather than give it back.
    shared_with_takeover: ClassVar[bool]

    def extend(self, until: datetime) -> list[str]:
        """Hold on to `until`; the names of what it no longer holds (it lapsed and another run took it)."""
        ...

    def release(self) -> None: ...

    def carry(self, until: datetime) -> None:
        """The run yielded, or its next segment waits (docs/durable-runs.md): keep it until `until`, for the run's
        next segment, or give it back if a run does not keep it between segments."""
        ...


@dataclass(frozen=True)
class Entry:
    """What a gate looks at: the leased run, what it runs, its lease's owner and end, and the time."""

    run: Run
    target: RunTarget
    owner: str
    until: datetime
    now: datetime


@dataclass(frozen=True)
class Admit:
    """The run may go on: holding `hold` (None: nothing), and running `target` instead if given (the breaker's
    probe: its job as it now stands)."""

    hold: Hold | None = None
    target: RunTarget | None = None


@dataclass(frozen=True)
class Skip:
    """The run is recorded SKIPPED with `reason`."""

    reason: SkipReason


@dataclass(frozen=True)
class Deferral:
    """The run waits: the lease goes back with the attempt not consumed, and it looks again after `wait_seconds`."""

    reason: DeferReason
    wait_seconds: int


@dataclass(frozen=True)
class Fail:
    """The run is recorded FAILED with `error`, without running."""

    error: RunError


ADMIT = Admit()
Answer = Admit | Skip | Deferral | Fail
Refusal = Skip | Deferral | Fail


class Gate(Protocol):
    def admit(self, entry: Entry) -> Answer: ...


@dataclass
class Held:
    """Everything an admitted run holds, in the order its gates took it: extended together, given back together
    (last taken, first given back), once."""

    items: list[Hold] = field(default_factory=list)

    def extend(self, until: datetime) -> list[str]:
        return [lost for hold in self.items for lost in hold.extend(until)]

    def release(self) -> None:
        """Give back what is held (a second call gives back nothing)."""
        while self.items:
            self.items.pop().release()

    def carry(self, until: datetime) -> None:
        """Between a yielded run's segments: each hold kept until `until` or given back, as it says (once)."""
        while self.items:
            self.items.pop().carry(until)

    def keep_until_lease_ends(self) -> None:
        """Give back nothing: a handler still running past its executor's wait keeps what admitted it, extended by
        the heartbeat for as long as it runs, ending with its lease."""
        self.items.clear()

    def lease_lost(self) -> None:
        """Another executor took the run over: what it holds under the run's id is its now."""
        self.items = [hold for hold in self.items if not hold.shared_with_takeover]


@dataclass(frozen=True)
class Admitted:
    entry: Entry  # its target as the gates left it
    held: Held


@dataclass(frozen=True)
class Refused:
    entry: Entry  # its target as the gates left it (the breaker's probe is recorded as the probe)
    refusal: Refusal
    held: Held  # what the gates before the refusal admitted: the caller gives it back (or carries it)


def admit(gates: Sequence[Gate], entry: Entry) -> Admitted | Refused:
    """Run the gates in order: all admitted (with what they hold), or the first refusal, with what the gates before
    it took (given back by the caller, or kept by a yielded run's next segment that waits: RunExecutor)."""
    held = Held()
    for gate in gates:
        answer = gate.admit(entry)
        if not isinstance(answer, Admit):
            return Refused(entry, answer, held)
        if answer.hold is not None:
            held.items.append(answer.hold)
        if answer.target is not None:
            entry = replace(entry, target=answer.target)
    return Admitted(entry, held)


class AttemptsGate:
    """Earlier attempts died without recording an outcome (a crashing run): it stops here, failed."""

    def admit(self, entry: Entry) -> Answer:
        if entry.run.attempts > entry.target.retry.max_attempts:
            return Fail(
                RunError(type="AttemptsExhausted", message="attempts exhausted by executor crashes or timeouts")
            )
        return ADMIT
