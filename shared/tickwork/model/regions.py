"""Which region may claim, lease and record outcomes, and how a failover changes that (docs/regions.md). Pure.

In `single` and `strong` every region works all the time: the conditional writes are the lock, in one table or in
an MRSC global table. In `eventual` (an MREC global table) a conditional write is a lock only within the region
that writes it, so one region is active: the region-role item names it and an epoch, and a region works only while
that item names it (`admission`, `still_admitted`). No region is active until the first failover names one.

A failover (`plan_failover`) makes another region active in two steps, so that the old active region stops writing
before the target starts: a handover first (the next epoch, no region active, naming the target: every region's
fence reads it as "nobody active"), then, once the table's replication has caught up with the old region
(`replication_caught_up` decides it from what a probe read), the target active under the epoch after. Forced, it is
one step, and the runs not ended may run twice (`possibly_twice`), and they are reported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tickwork.model.states import RunStatus


class RegionMode(StrEnum):
    SINGLE = "single"
    STRONG = "strong"
    EVENTUAL = "eventual"


class RegionRoles(BaseModel):
    """The region-role item: the active region and the epoch it was made active under (`eventual` only). During a
    handover no region is active: `active_region` is None, and the item names the region handed over to and the one
    handed over from (the old active region), since `since`."""

    model_config = ConfigDict(frozen=True)

    active_region: str | None = Field(default=None, min_length=1)
    epoch: int = Field(ge=1)
    since: datetime
    handing_over_to: str | None = None
    handing_over_from: str | None = None

    @model_validator(mode="after")
    def _active_or_handing_over(self) -> RegionRoles:
        if (self.active_region is None) == (self.handing_over_to is None or self.handing_over_from is None):
            raise ValueError("a region-role item names an active region, or a handover (to and from), not both")
        return self

    @property
    def handing_over(self) -> bool:
        return self.active_region is None


@dataclass(frozen=True)
class Admission:
    """A region's leave to claim and lease: the epoch it works under (0 where every region works)."""

    epoch: int


EVERY_REGION = Admission(epoch=0)


def admission(mode: RegionMode, roles: RegionRoles | None, region: str) -> Admission | None:
    """The epoch `region` may claim and lease under now, or None: fenced (not the active region, or none is: before
    the first failover, and during a handover, when the old active region stops at its next fence read)."""
    if mode is not RegionMode.EVENTUAL:
        return EVERY_REGION
    if roles is None or roles.active_region != region:
        return None
    return Admission(roles.epoch)


def still_admitted(mode: RegionMode, roles: RegionRoles | None, region: str, admitted: Admission) -> bool:
    """Whether work admitted under `admitted` may still make a side effect or record its outcome: the region is
    active under the same epoch (no failover since)."""
    return admission(mode, roles, region) == admitted


class FailoverRefusal(StrEnum):
    NOT_EVENTUAL = "a failover is for RegionMode eventual; in single and strong every region works"
    UNKNOWN_REGION = "not one of the global table's regions"
    ALREADY_ACTIVE = "already the active region"
    NOT_CAUGHT_UP = "replication has not caught up with the old active region; wait, or force"
    CANNOT_TELL = (
        "whether replication has caught up with the old active region cannot be told; make sure that region is "
        "stopped (docs/regions.md, section 8), then force"
    )
    HANDING_OVER_ELSEWHERE = "a handover to another region is under way: fail over to that region, or force"


# The longest a fenced write lands after the fence read before it: one DynamoDB call (a claim, a lease, an outcome)
# with the SDK's retries of a throttle or a 5xx (tickwork.aws.clients: 6 attempts, backoff up to 20 s each), or a
# tick's slice of claims (tickwork.tick.dispatch). A handover waits this long after the old region saw it.
FENCE_READ_TO_WRITE = timedelta(seconds=60)
# Added to CloudWatch's ReplicationLatency, a per-minute Maximum of what did replicate (no SLA on it).
REPLICATION_MARGIN = timedelta(seconds=10)


@dataclass(frozen=True)
class Replication:
    """A probe's answer: whether the old active region's writes have all reached the target (None: it cannot be
    told), and why not."""

    caught_up: bool | None
    reason: str = ""


@dataclass(frozen=True)
class FailoverPlan:
    """The region-role item a failover writes (conditioned on `previous`'s epoch), and whether it was forced past
    replication that had not caught up: then `possibly_twice` names the runs that may run twice. A handover's
    `roles` name no active region; the failover is not done until a later one completes it."""

    roles: RegionRoles
    previous: RegionRoles | None
    forced: bool

    @property
    def handover(self) -> bool:
        return self.roles.handing_over


def plan_failover(
    mode: RegionMode,
    roles: RegionRoles | None,
    to: str,
    regions: Sequence[str],
    *,
    caught_up: bool | None,
    force: bool,
    now: datetime,
) -> FailoverPlan | FailoverRefusal:
    """Make `to` active. From an active region, not forced: the handover (the next epoch, no region active, naming
    `to` and the old region); during the handover to `to`: `to` active under the next epoch once `caught_up`
    (whether every write of the old region has reached `to`'s replica; None: it cannot be told). Forced: `to` active
    at once, from either. The first activation (no region active yet) has nothing to wait for."""
    if mode is not RegionMode.EVENTUAL:
        return FailoverRefusal.NOT_EVENTUAL
    if to not in regions:
        return FailoverRefusal.UNKNOWN_REGION
    if roles is None:
        return FailoverPlan(RegionRoles(active_region=to, epoch=1, since=now), previous=None, forced=False)
    if roles.active_region == to:
        return FailoverRefusal.ALREADY_ACTIVE
    epoch = roles.epoch + 1
    if roles.handing_over and roles.handing_over_to != to and not force:
        return FailoverRefusal.HANDING_OVER_ELSEWHERE
    if roles.active_region is not None and not force:
        handover = RegionRoles(epoch=epoch, since=now, handing_over_to=to, handing_over_from=roles.active_region)
        return FailoverPlan(handover, previous=roles, forced=False)
    lagging = caught_up is not True
    if lagging and not force:
        return FailoverRefusal.NOT_CAUGHT_UP if caught_up is False else FailoverRefusal.CANNOT_TELL
    return FailoverPlan(RegionRoles(active_region=to, epoch=epoch, since=now), previous=roles, forced=lagging)


def replication_caught_up(
    handover: RegionRoles,
    seen_in_old: RegionRoles | None,
    first_seen_at: datetime | None,
    latency_ms: float | None,
    now: datetime,
) -> Replication:
    """Whether the old active region's writes have all reached the target, from what a probe read (an MREC global
    table gives no exact signal; docs/regions.md, section 6): caught up once the old region's own replica shows the
    handover (`seen_in_old`, read there at `first_seen_at` first), so its nodes stop at their next fence read, and
    since then its last fenced write (`FENCE_READ_TO_WRITE`) and the latest ReplicationLatency Maximum from it to
    the target (`latency_ms`, None: no data), plus `REPLICATION_MARGIN`, have passed."""
    if seen_in_old is None or seen_in_old.epoch < handover.epoch or first_seen_at is None:
        return Replication(False, "the old active region's replica does not show the handover yet")
    if latency_ms is None:
        return Replication(None, "no ReplicationLatency data from the old active region to the target")
    wait = FENCE_READ_TO_WRITE + timedelta(milliseconds=latency_ms) + REPLICATION_MARGIN
    if now < first_seen_at + wait:
        left = math.ceil((first_seen_at + wait - now).total_seconds())
        return Replication(False, f"waiting {left} s more for the old region's last writes to replicate")
    return Replication(True)


@dataclass(frozen=True)
class SeenRun:
    """What `possibly_twice` reads of a run in the new active region's replica: its id and status."""

    run_id: str
    status: RunStatus


def possibly_twice(plan: FailoverPlan, runs: Iterable[SeenRun]) -> list[str]:
    """After a forced failover, the runs that may run twice: every run not ended, as the new active region's replica
    shows them. The old region may have leased any of them (its lease not yet replicated) and started the effect;
    the new region runs them again when their leases lapse or their messages are re-sent. None after a failover
    that waited for replication: the old region's leases are then all seen, and fenced by the owner condition.
    (An occurrence the old region claimed whose record never reached the new replica is not listed: the new region
    claims it afresh under the same run id, tickwork.model.ids.run_id_for, so it is the same run id the old
    region reports.)"""
    if not plan.forced:
        return []
    return sorted(r.run_id for r in runs if not r.status.terminal)


def regions_of(setting: str) -> tuple[str, ...]:
    """The global table's regions, as GLOBAL_TABLE_REGIONS gives them (comma-separated)."""
    return tuple(r for r in re.split(r"\s*,\s*", setting.strip()) if r)
