"""Limits shared by runs, checked by the executor after the lease and before the handler (docs/fairness.md):

- the tenant's `max_concurrent_runs` (TenantSettings): a semaphore on a tenant-wide key;
- a job's or step's `concurrency` {key, limit}: a semaphore on the tenant's key;
- a job's or step's `rate_limit` {key, per_second | per_minute}: GCRA on the tenant's key.

A semaphore slot is held until the run's lease ends, and the heartbeat extends it with the lease, so a long run
keeps its slot and a crashed holder's slot frees when its lease ends (never leaked). The slots are taken first
(the tenant's, then the key's), then the rate; what was taken is given back when a later check refuses, so a
refused run holds nothing. A refused run is deferred, not failed: it knows when to look again (the rate's exact
wait; for a semaphore, an exponential backoff with jitter on how often it was deferred, so it never spins).

The rate admits no burst: two runs of a key start at least 1/rate apart, even after a quiet spell. That is the
strict reading of "never faster than the rate" the third-party APIs these limits protect tend to enforce.

A run with no key, of a tenant with no concurrency quota, costs nothing here: no item is read or written (the
tenant's settings come from the TenantDirectory's cache, read at most once per tenant every 30 s).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Protocol

from tickwork.executor.admission import Admit, Answer, Deferral, Entry
from tickwork.model.backoff import Random
from tickwork.model.run_target import RunTarget
from tickwork.model.states import DeferReason
from tickwork.model.tenant_settings import TenantSettings
from tickwork.store import TENANT_SEMAPHORE, RateAdmission, rate_sort, semaphore_sort

SEMAPHORE_WAIT_BASE_SECONDS = 1
SEMAPHORE_WAIT_MAX_SECONDS = 60


class LimitItems(Protocol):
    """Where semaphores and rates are kept (tickwork.store.LimitRecords)."""

    def acquire(self, tenant: str, sort: str, *, holder: str, limit: int, until: datetime, now: datetime) -> bool: ...

    def extend(self, tenant: str, sort: str, *, holder: str, until: datetime) -> bool: ...

    def release(self, tenant: str, sort: str, *, holder: str) -> None: ...

    def admit_rate(self, tenant: str, sort: str, *, interval_ms: int, now: datetime) -> RateAdmission: ...


class TenantQuotas(Protocol):
    """Tenants' settings as recently read (tickwork.model.tenant_settings.TenantDirectory)."""

    def settings_of(self, tenant: str) -> TenantSettings: ...


@dataclass
class Holds:
    """The semaphore slots a run holds (by its lease owner, so that a takeover's holds are its own): extended
    with its lease, released when it ends, however it ends. Empty for a run nothing limits (costs nothing)."""

    items: LimitItems | None
    tenant: str
    holder: str
    sorts: list[str] = field(default_factory=list)
    kept: bool = False  # held until the lease ends, not released (see keep_until_lease_ends)
    shared_with_takeover: ClassVar[bool] = False  # held by its lease owner: a takeover's are its own

    def extend(self, until: datetime) -> list[str]:
        """Run each hold on to `until`; the slots it no longer holds, by name (its hold lapsed and another run took
        the slot since: tickwork.executor.heartbeat stops the run)."""
        lost = []
        for sort in self.sorts:
            assert self.items is not None
            if not self.items.extend(self.tenant, sort, holder=self.holder, until=until):
                lost.append(slot_name(sort))
        return lost

    def release(self) -> None:
        """Give every slot back (once: a second call releases nothing)."""
        if self.kept:
            return
        for sort in reversed(self.sorts):
            assert self.items is not None
            self.items.release(self.tenant, sort, holder=self.holder)
        self.sorts.clear()

    def carry(self, until: datetime) -> None:
        """A yielded run gives its slots back between segments: a concurrency slot bounds the handlers running at
        once, and a run between segments runs none; its next segment takes them again (docs/fairness.md)."""
        self.release()

    def keep_until_lease_ends(self) -> None:
        """Release nothing: a handler still running past its executor's wait keeps its slots, extended by the
        heartbeat for as long as it runs, ending with its lease."""
        self.kept = True


def slot_name(sort: str) -> str:
    """A semaphore as a run's record names it."""
    if sort == TENANT_SEMAPHORE:
        return "the tenant's max_concurrent_runs slot"
    return f"its concurrency key '{sort.removeprefix(semaphore_sort(''))}' slot"


def semaphore_wait_seconds(deferred: int, rng: Random | None = None) -> int:
    """How long a run refused by a full semaphore waits: 1 s doubling with each deferral to 60 s, the upper
    half of it jittered (so waiters spread out, and never come back sooner than half the step: no spin)."""
    step = min(SEMAPHORE_WAIT_MAX_SECONDS, SEMAPHORE_WAIT_BASE_SECONDS * 2 ** min(deferred, 16))
    return max(1, math.ceil(step / 2 + (rng or random).random() * step / 2))


class RunLimits:
    def __init__(self, items: LimitItems, tenants: TenantQuotas, *, rng: Random | None = None) -> None:
        self.items = items
        self.tenants = tenants
        self.rng = rng

    def admit(self, entry: Entry) -> Answer:
        """The gate: after the overlap check, so that a run skipped anyway takes no slot and no turn of a rate."""
        holds = self.take(
            entry.target, holder=entry.owner, deferred=entry.run.deferred, until=entry.until, now=entry.now
        )
        return Admit(holds) if isinstance(holds, Holds) else holds

    def take(
        self, target: RunTarget, *, holder: str, deferred: int, until: datetime, now: datetime
    ) -> Holds | Deferral:
        """Take what the run needs to start (its slots until `until`, its rate's turn), or say why not yet."""
        holds = Holds(self.items, target.tenant, holder)
        quota = self.tenants.settings_of(target.tenant).max_concurrent_runs
        semaphores: list[tuple[str, int, DeferReason]] = []
        if quota is not None:
            semaphores.append((TENANT_SEMAPHORE, quota, DeferReason.TENANT_CONCURRENCY))
        if target.concurrency is not None:
            key = target.concurrency
            semaphores.append((semaphore_sort(key.key), key.limit, DeferReason.CONCURRENCY_KEY))
        for sort, limit, reason in semaphores:
            if not self.items.acquire(target.tenant, sort, holder=holder, limit=limit, until=until, now=now):
                holds.release()
                return Deferral(reason, semaphore_wait_seconds(deferred, self.rng))
            holds.sorts.append(sort)
        if target.rate_limit is not None:
            rate = target.rate_limit
            admission = self.items.admit_rate(target.tenant, rate_sort(rate.key), interval_ms=rate.interval_ms, now=now)
            if not admission.admitted:
                holds.release()
                return Deferral(DeferReason.RATE_LIMIT, max(1, math.ceil(admission.wait_ms / 1000)))
        return holds
