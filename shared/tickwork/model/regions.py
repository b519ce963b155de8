"""Which region may claim, lease and record outcomes, and how a failover changes that (docs/regions.md). Pure.

In `single` and `strong` every region works all the time: the conditional writes are the lock, in one table or in
an MRSC global table. In `eventual` (an MREC global table) a conditional write is a lock only within the region
that writes it, so one region is active: the region-role item names it and an epoch, and a region works only while
that item names it (`admission`, `still_admitted`). No region is active until the first failover names one.

A failover (`plan_failover`) makes another region active under the next epoch. It waits until the table's
replication has caught up with the old active region, unless forced; forced, the runs not ended may run twice
(`possibly_twice`), and they are reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.states import RunStatus


class RegionMode(StrEnum):
    SINGLE = "single"
    STRONG = "strong"
    EVENTUAL = "eventual"


class RegionRoles(BaseModel):
    """The region-role item: the active region and the epoch it was made active under (`eventual` only)."""

    model_config = ConfigDict(frozen=True)

    active_region: str = Field(min_length=1)
    epoch: int = Field(ge=1)
    since: datetime


@dataclass(frozen=True)
class Admission:
    """A region's leave to claim and lease: the epoch it works under (0 where every region works)."""

    epoch: int


EVERY_REGION = Admission(epoch=0)


def admission(mode: RegionMode, roles: RegionRoles | None, region: str) -> Admission | None:
    """The epoch `region` may claim and lease under now, or None: fenced (not the active region, or none is)."""
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
    NOT_CAUGHT_UP = "replication has not caught up with the active region (or it cannot be told); wait, or force"


@dataclass(frozen=True)
class FailoverPlan:
    """The region-role item a failover writes (conditioned on `previous`'s epoch), and whether it was forced past
    replication that had not caught up: then `possibly_twice` names the runs that may run twice."""

    roles: RegionRoles
    previous: RegionRoles | None
    forced: bool


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
    """Make `to` active under the next epoch. `caught_up`: whether every write of the active region has reached
    `to`'s replica (None: it cannot be told, the active region being unreachable). The first activation (no
    region active yet) has nothing to wait for."""
    if mode is not RegionMode.EVENTUAL:
        return FailoverRefusal.NOT_EVENTUAL
    if to not in regions:
        return FailoverRefusal.UNKNOWN_REGION
    if roles is not None and roles.active_region == to:
        return FailoverRefusal.ALREADY_ACTIVE
    lagging = roles is not None and caught_up is not True
    if lagging and not force:
        return FailoverRefusal.NOT_CAUGHT_UP
    epoch = roles.epoch + 1 if roles is not None else 1
    return FailoverPlan(RegionRoles(active_region=to, epoch=epoch, since=now), previous=roles, forced=lagging)


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
