"""A tenant's settings: its fair-share weight and its quotas, set by an admin (docs/fairness.md).

Every setting but the weight is optional, and an absent one means no limit. The tick reads the weights and
rate quotas of the tenants it has work for, and the executor a tenant's concurrency quota, through
`TenantDirectory`, which keeps what it read for a short while: a change reaches every function within
`CACHE_SECONDS`, and a busy tick or executor reads each tenant's settings at most that often.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Annotated, Protocol

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.clock import Clock
from tickwork.model.policies import DispatchOrder, NotCoerced

DEFAULT_WEIGHT = 1
CACHE_SECONDS = 30

Weight = Annotated[int, Field(ge=1, le=100), NotCoerced]
Quota = Annotated[int, Field(ge=1, le=1_000_000), NotCoerced]


class TenantSettings(BaseModel):
    """What an admin sets for a tenant (PUT /v1/tenants/{tenant}); absent quotas mean no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weight: Weight = DEFAULT_WEIGHT
    max_active_jobs: Quota | None = None
    max_runs_per_minute: Quota | None = None
    max_concurrent_runs: Quota | None = None
    # Which of a band's due items a tick short of room claims first, for its jobs that set none (docs/forecasts.md).
    dispatch_order: DispatchOrder = DispatchOrder.EDF


DEFAULTS = TenantSettings()


class TenantSettingsSource(Protocol):
    """Where settings are stored (tickwork.store.TenantRecords)."""

    def get_settings_many(self, tenants: Iterable[str]) -> dict[str, TenantSettings]: ...


class TenantDirectory:
    """Tenants' settings as recently read: one BatchGetItem for the tenants not read in the last CACHE_SECONDS.

    A tenant with no settings item has the defaults (weight 1, no limits). Thread-safe: the tick's claim
    threads and the executor's batch share one directory per execution environment."""

    def __init__(
        self, source: TenantSettingsSource, clock: Clock, *, ttl: timedelta = timedelta(seconds=CACHE_SECONDS)
    ):
        self._source = source
        self._clock = clock
        self._ttl = ttl
        self._cache: dict[str, tuple[datetime, TenantSettings]] = {}
        self._lock = threading.Lock()

    def settings_of(self, tenant: str) -> TenantSettings:
        return self.settings_for([tenant])[tenant]

    def settings_for(self, tenants: Iterable[str]) -> dict[str, TenantSettings]:
        now = self._clock.now()
        wanted = set(tenants)
        with self._lock:
            fresh = {t: s for t, (at, s) in self._cache.items() if t in wanted and now - at < self._ttl}
        missing = wanted - fresh.keys()
        if missing:
            read = self._source.get_settings_many(missing)
            found = {t: read.get(t, DEFAULTS) for t in missing}
            with self._lock:
                self._cache.update({t: (now, s) for t, s in found.items()})
            fresh.update(found)
        return fresh

    def forget(self, tenant: str) -> None:
        """Drop what this directory read of a tenant (after this process changed its settings)."""
        with self._lock:
            self._cache.pop(tenant, None)


def rate_window(now: datetime) -> int:
    """The epoch minute `now` falls in: the window a tenant's per-minute rate quota counts in."""
    return int(now.timestamp()) // 60
