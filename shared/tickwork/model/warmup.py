"""Warm-ups for bursts the due index shows coming: the pure decision (no I/O). The tick reads every shard up to
now + horizon anyway, so it knows, from what it read and at no extra request, how many runs fall due in each
coming second; before a burst it asks for what the burst will need (tickwork.tick.warmup does the asking):

- executor execution environments, by warming invocations: one no-op invoke per environment the busiest second
  needs beyond those warmed recently (a batch of up to `runs_per_environment` runs runs in one environment);
- the table's warm write throughput (on-demand), when the busiest second's writes would pass what the table is
  known to sustain without throttling.

Why warming invocations rather than provisioned concurrency (docs/scale.md, "Bursts"): they need nothing deployed
beside the function (provisioned concurrency needs an alias, and the event source mappings pointed at it), they
hold nothing to release after the burst, an environment they start is ready in one cold start, within the minute
the tick sees the burst ahead (provisioned concurrency takes minutes to allocate, longer than the horizon), and
they cost one short invocation each instead of a charge for every minute the concurrency stays allocated."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.clock import from_ms, to_ms

# A new on-demand table sustains 4,000 write units a second without throttling (its warm throughput) until it
# has served more; what it is known to sustain before the table is read.
ON_DEMAND_WRITE_UNITS = 4000
# Write units a one-shot run costs from claim to outcome in the default configuration (docs/benchmarks.md).
WRITE_UNITS_PER_RUN = 12
# Warm throughput is asked for in whole steps, so that bursts a little larger each time do not ask every tick.
WRITE_UNITS_STEP = 1000
# How long a warming invocation holds its environment: long enough that invocations sent together land in
# environments of their own rather than one after the other in the same one.
WARM_HOLD_MS = 500
MAX_WARM_HOLD_MS = 5000


class WarmRequest(BaseModel):
    """What a warming invocation asks of the executor: initialise, then hold the environment a moment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hold_ms: int = Field(default=WARM_HOLD_MS, ge=0, le=MAX_WARM_HOLD_MS)


class WarmEvent(BaseModel):
    """A warming invocation's event (the tick sends it; the executor's handler answers it and runs nothing)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tickwork_warm: WarmRequest

    @staticmethod
    def of(event: Mapping[str, object]) -> WarmEvent | None:
        """The warming request an event is, or None for any other event (an SQS batch)."""
        return WarmEvent.model_validate(event) if "tickwork_warm" in event else None


class WarmupPolicy(BaseModel):
    """What the tick may warm, and the figures it plans with."""

    model_config = ConfigDict(frozen=True)

    executor: bool = False  # warming invocations of the executor (template parameter ExecutorWarmup)
    table: bool = False  # the table's warm write throughput (template parameter TableWarmup)
    max_environments: int = Field(default=75, ge=1)  # the band event sources' MaximumConcurrency, summed
    runs_per_environment: int = Field(default=10, ge=1)  # the event sources' BatchSize: a batch runs together
    burst_runs: int = Field(default=50, ge=1)  # a second with at least this many runs due is a burst
    write_units_per_run: int = Field(default=WRITE_UNITS_PER_RUN, ge=1)
    keep_warm: timedelta = timedelta(minutes=5)  # environments warmed this recently are taken as still warm
    # A burst sooner than this is not warmed for: its runs would find the environments still held by the warm-up.
    min_lead: timedelta = timedelta(seconds=5)

    @property
    def enabled(self) -> bool:
        return self.executor or self.table

    def for_share(self, share: float, *, table: bool) -> WarmupPolicy:
        """The policy of a dispatch worker that reads `share` of the due index's shards (fan-out): a burst and the
        environments in proportion, and, where it warms the table (`table`: one worker a tick), its slice's writes
        taken for the whole index's."""
        if share >= 1:
            return self.model_copy(update={"table": self.table and table})
        return self.model_copy(
            update={
                "table": self.table and table,
                "burst_runs": max(1, math.ceil(self.burst_runs * share)),
                "max_environments": max(1, math.ceil(self.max_environments * share)),
                "write_units_per_run": math.ceil(self.write_units_per_run / share),
            }
        )


class WarmCapacity(BaseModel):
    """What is taken as warm already: environments warmed within `keep_warm`, and the table's warm throughput."""

    model_config = ConfigDict(frozen=True)

    environments: int = Field(default=0, ge=0)
    table_write_units: int = Field(default=ON_DEMAND_WRITE_UNITS, ge=0)


class WarmupPlan(BaseModel):
    """What to ask for now: warming invocations to send, and the warm write throughput to set (None: none)."""

    model_config = ConfigDict(frozen=True)

    burst_at: datetime | None = None  # the busiest second to come, when it is a burst
    burst_runs: int = 0
    environments: int = 0
    table_write_units: int | None = None

    @property
    def anything(self) -> bool:
        return self.environments > 0 or self.table_write_units is not None


def runs_per_second(due_ms: Iterable[int], after: datetime) -> Counter[int]:
    """How many of these due instants (epoch ms) fall in each whole second (epoch s) after `after`."""
    start = to_ms(after)
    return Counter(ms // 1000 for ms in due_ms if ms > start)


def plan_warmup(upcoming: Mapping[int, int], current: WarmCapacity, policy: WarmupPolicy) -> WarmupPlan:
    """The warm-up the busiest coming second needs (`upcoming`: runs due per epoch second), beyond `current`.
    Nothing unless that second holds a burst (at least `policy.burst_runs` runs)."""
    if not policy.enabled or not upcoming:
        return WarmupPlan()
    second, runs = max(upcoming.items(), key=lambda entry: (entry[1], -entry[0]))
    if runs < policy.burst_runs:
        return WarmupPlan()
    environments = 0
    if policy.executor:
        wanted = min(policy.max_environments, math.ceil(runs / policy.runs_per_environment))
        environments = max(0, wanted - current.environments)
    table_write_units = None
    if policy.table:
        needed = runs * policy.write_units_per_run
        if needed > current.table_write_units:
            table_write_units = math.ceil(needed / WRITE_UNITS_STEP) * WRITE_UNITS_STEP
    return WarmupPlan(
        burst_at=from_ms(second * 1000),
        burst_runs=runs,
        environments=environments,
        table_write_units=table_write_units,
    )
