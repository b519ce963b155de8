"""Fair share at dispatch: which of a tick's due items it acts on when it cannot act on them all.

Pure (no AWS): the dispatcher reads the due items, the tenants' weights and rate budgets, and claims what
`allocate` chooses.

A tick acts on at most `capacity` items (MaxDispatchPerTick), and a tenant with a rate quota on at most its
budget of runs. When everything fits (the common case) the answer is every item in today's order: what must go
before the next tick first, then priority 9..0, then the oldest. When something must be held back, the slots
are shared out class by class, in that same order of classes (must-go-now before look-ahead; within each, the
high band, then normal, then low), and within a class by deficit round robin across tenants with quantum =
the tenant's weight: under saturation a tenant of weight 3 gets three slots for every one of a tenant of
weight 1. Within a tenant, its own items keep today's order, in which, within a band, the item whose run has the
least slack (the earliest deadline, tickwork.model.deadlines) goes first: earliest deadline first, within fair
share. A job (or its tenant) with `dispatch_order: sjf` competes by its run's expected end instead, now plus its
forecast's p50 (tickwork.model.forecasts): among such items, shortest job first; beside an earliest-deadline item,
the two instants compare (when one must end, when the other would). An item with neither a deadline nor a
forecast goes after those with one.

Aging: an item overdue by more than `aging_after` competes one band higher per such period (capped at high), so
a flood in the high band cannot hold the low band back forever. Only its class changes; its run's priority,
queue and lateness stay what they are.

Cost: one sort, then every item is taken or held at most once (O(n log n)).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Generic, TypeVar

from tickwork.model.policies import Band
from tickwork.model.tenant_settings import rate_window

T = TypeVar("T")

_BAND_RANK = {Band.LOW: 0, Band.NORMAL: 1, Band.HIGH: 2}
_TOP_RANK = _BAND_RANK[Band.HIGH]


class HoldReason(StrEnum):
    """Why an item was not acted on this tick (it stays due and a later tick takes it)."""

    CAPACITY = "capacity"  # MaxDispatchPerTick: the tick's slots went to others
    TENANT_RATE = "tenant_rate"  # the tenant's max_runs_per_minute budget for this window is spent


@dataclass(frozen=True)
class Candidate(Generic[T]):
    """A due item as the allocator sees it. `cost` is the runs acting on it dispatches against its tenant's
    rate budget (0: recovery work, such as a re-send, that no quota holds back)."""

    item: T
    tenant: str
    priority: int
    due_at_ms: int
    urgent: bool  # must go before the next tick
    cost: int = 0
    # When the run it dispatches must have ended (its job's deadline); None: no deadline.
    deadline_at_ms: int | None = None
    # Its dispatch order (DispatchOrder.SJF: shortest job first) and its run's expected length (its job's p50).
    shortest_first: bool = False
    expected_ms: int | None = None

    def today_key(self, now_ms: int) -> tuple[bool, int, float, int, int]:
        """The tick's order when nothing is held back: must-go-now first, then the band (high first); within a
        band the least slack first (earliest deadline; none last), or for shortest-first the earliest expected
        end (now plus its p50), then priority 9..0, then the oldest. Without deadlines or shortest-first, that is
        priority 9..0 then the oldest (a band is a range of priorities)."""
        band = _BAND_RANK[Band.of_priority(self.priority)]
        return (not self.urgent, -band, self._end_by(now_ms), -self.priority, self.due_at_ms)

    def _end_by(self, now_ms: int) -> float:
        if self.shortest_first and self.expected_ms is not None:
            return now_ms + self.expected_ms
        if self.shortest_first or self.deadline_at_ms is None:
            return float("inf")
        return self.deadline_at_ms


@dataclass(frozen=True)
class Allotted(Generic[T]):
    """A chosen item; `max_runs` caps the runs it may dispatch (its tenant's budget left), None: no cap."""

    candidate: Candidate[T]
    max_runs: int | None = None

    @property
    def item(self) -> T:
        return self.candidate.item


@dataclass
class Allocation(Generic[T]):
    chosen: list[Allotted[T]] = field(default_factory=list)  # in the order to act on them
    held: dict[str, Counter[HoldReason]] = field(default_factory=dict)  # tenant -> reason -> items held back

    @property
    def held_by_reason(self) -> Counter[HoldReason]:
        total: Counter[HoldReason] = Counter()
        for reasons in self.held.values():
            total.update(reasons)
        return total

    def shares(self) -> Counter[str]:
        """Items chosen per tenant."""
        return Counter(a.candidate.tenant for a in self.chosen)

    def _hold(self, candidate: Candidate[T], reason: HoldReason) -> None:
        self.held.setdefault(candidate.tenant, Counter())[reason] += 1


def effective_band_rank(candidate: Candidate[T], *, now_ms: int, aging_after_ms: int) -> int:
    """The band an item competes in: its own, one up per `aging_after_ms` it is overdue, capped at high."""
    rank = _BAND_RANK[Band.of_priority(candidate.priority)]
    overdue = now_ms - candidate.due_at_ms
    if aging_after_ms <= 0 or overdue <= aging_after_ms:
        return rank
    return min(_TOP_RANK, rank + (overdue - 1) // aging_after_ms)  # strictly more than k periods: k up


def allocate(
    candidates: Iterable[Candidate[T]],
    *,
    capacity: int,
    weights: Mapping[str, int],
    budgets: Mapping[str, int],
    now_ms: int,
    aging_after_ms: int,
) -> Allocation[T]:
    """Choose the items to act on, in order, and count what is held back per tenant and reason.

    `weights`: a tenant's weight (absent: 1). `budgets`: the runs a rate-limited tenant may still dispatch
    (absent: no limit)."""
    ordered = sorted(candidates, key=lambda c: c.today_key(now_ms))
    allocation: Allocation[T] = Allocation()
    if len(ordered) <= capacity and _within_budgets(ordered, budgets):
        allocation.chosen = [Allotted(c, max_runs=c.cost if c.cost and c.tenant in budgets else None) for c in ordered]
        return allocation

    # Classes in order (must-go-now first, then the effective band, high first); within each class a queue per
    # tenant, in today's order, and the tenants in the order of their first item (deterministic).
    classes: dict[tuple[bool, int], dict[str, deque[Candidate[T]]]] = {}
    for c in ordered:
        rank = effective_band_rank(c, now_ms=now_ms, aging_after_ms=aging_after_ms)
        classes.setdefault((not c.urgent, -rank), {}).setdefault(c.tenant, deque()).append(c)

    left = dict(budgets)
    slots = capacity
    chosen: list[Allotted[T]] = []
    for cls in sorted(classes):
        queues = classes[cls]
        active = deque(queues)
        deficit = dict.fromkeys(queues, 0)
        while active and slots > 0:
            tenant = active.popleft()
            queue = queues[tenant]
            deficit[tenant] += max(1, weights.get(tenant, 1))
            while queue and deficit[tenant] >= 1 and slots > 0:
                c = queue.popleft()
                if c.cost > 0 and tenant in left:
                    if left[tenant] <= 0:
                        allocation._hold(c, HoldReason.TENANT_RATE)  # takes no slot and no deficit
                        continue
                    runs = min(c.cost, left[tenant])
                    left[tenant] -= runs
                    chosen.append(Allotted(c, max_runs=runs))
                else:
                    chosen.append(Allotted(c))
                slots -= 1
                deficit[tenant] -= 1
            if queue:
                active.append(tenant)
        for queue in queues.values():
            for c in queue:
                spent = c.cost > 0 and left.get(c.tenant, 1) <= 0
                allocation._hold(c, HoldReason.TENANT_RATE if spent else HoldReason.CAPACITY)
    allocation.chosen = sorted(chosen, key=lambda a: a.candidate.today_key(now_ms))
    return allocation


def _within_budgets(candidates: list[Candidate[T]], budgets: Mapping[str, int]) -> bool:
    if not budgets:
        return True
    demand: Counter[str] = Counter()
    for c in candidates:
        if c.tenant in budgets:
            demand[c.tenant] += c.cost
    return all(demand[t] <= budget for t, budget in budgets.items())


def held_by_quota(due_at: datetime, now: datetime, spent_windows: Collection[int]) -> bool:
    """Whether a rate-limited tenant's item, due at `due_at` and claimed at `now`, waited for the tenant's quota:
    a minute window of that quota (tickwork.store.tenant_rates) from the item's own to the one before now's was
    spent. Having a quota is not being held back by it: an item late for another reason (no tick ran: an outage)
    met no spent window, so its lateness is not the quota's, and its job's catch-up policy applies as to any
    other job's. Now's own window is left out: a window this tick spent (its own reservation) held nothing back
    before it, and an item held back earlier in now's window cannot be claimed in it."""
    first, before_now = rate_window(due_at), rate_window(now)
    return any(first <= window < before_now for window in spent_windows)
