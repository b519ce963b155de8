"""The regions' roles for an admin (docs/regions.md, RegionMode eventual): which region is active under which epoch,
and a failover that makes another one active (`tickwork regions failover --to REGION [--force]`, POST
/v1/regions/failover).

A failover is decided by tickwork.model.regions.plan_failover and written to the region-role item, conditioned on
the epoch it replaces, with its audit record. Not forced, it takes two requests: the first writes the handover (no
region active, so the old one stops at its next fence read) and is answered 409, replication not caught up yet; a
later one, once replication has caught up with the old region, makes the target active, and `Region Failover` goes
on the bus. Forced, it is one request, and its answer names the runs that may run twice (every run not ended, which
the due index holds until an outcome: tickwork.model.regions.possibly_twice).

Whether replication has caught up is a `ReplicationProbe`'s answer: on AWS (and in `tickwork dev`)
tickwork.control.replication_probe's; without one (`UNKNOWN_REPLICATION`) it cannot be told, and a handover is
completed only by force.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from tickwork.control.audit import AuditTrail
from tickwork.model.audit import Attribution, AuditResource
from tickwork.model.clock import Clock
from tickwork.model.errors import Conflict
from tickwork.model.ids import ItemKind
from tickwork.model.regions import (
    FailoverPlan,
    FailoverRefusal,
    RegionMode,
    RegionRoles,
    Replication,
    SeenRun,
    plan_failover,
    possibly_twice,
)
from tickwork.model.run_event_kinds import RunEventKind
from tickwork.model.run_events import RunEvent, event_id
from tickwork.model.states import RunStatus
from tickwork.observability import logger
from tickwork.store import DueIndex
from tickwork.store.regions import RegionRoleRecords

REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-[0-9]$"
FAR_FUTURE_MS = 10**13  # past every due-index entry: the report reads them all


class FailoverRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    to: str = Field(pattern=REGION_PATTERN, description="The region to make active.")
    force: bool = Field(
        default=False,
        description="Fail over although replication has not caught up (or cannot be told); the answer names the "
        "runs that may run twice.",
    )


class RegionStatus(BaseModel):
    """This region's view of the roles: the mode, this region, and the active region and epoch its replica holds
    (none before the first failover, and always none outside RegionMode eventual)."""

    mode: RegionMode
    region: str
    active_region: str | None = None
    epoch: int | None = None
    since: datetime | None = None
    handing_over_to: str | None = Field(
        default=None, description="During a handover (no region active): the region it makes active."
    )
    handing_over_from: str | None = Field(default=None, description="During a handover: the old active region.")


class FailoverResult(BaseModel):
    active_region: str
    epoch: int
    since: datetime
    previous_region: str | None
    forced: bool
    possibly_twice: list[str] = Field(description="Runs that may run twice: every run not ended, after a forced one.")


class ReplicationProbe(Protocol):
    def caught_up(self, handover: RegionRoles) -> Replication:
        """Whether every write of the region handed over from has reached the region handed over to."""
        ...


class _UnknownReplication:
    def caught_up(self, handover: RegionRoles) -> Replication:
        return Replication(None, "no replication probe")


UNKNOWN_REPLICATION: ReplicationProbe = _UnknownReplication()


class RegionFailovers:
    def __init__(
        self,
        records: RegionRoleRecords,
        due: DueIndex,
        publish: Publisher,
        clock: Clock,
        *,
        mode: RegionMode,
        region: str,
        regions: Sequence[str],
        shards: int,
        probe: ReplicationProbe = UNKNOWN_REPLICATION,
        audit: AuditTrail | None = None,
    ) -> None:
        self.records, self.due, self.publish, self.clock = records, due, publish, clock
        self.audit = audit  # None: no audit record (a caller that is no one's)
        self.mode, self.region, self.regions, self.shards, self.probe = mode, region, tuple(regions), shards, probe

    def status(self) -> RegionStatus:
        roles = self.records.roles() if self.mode is RegionMode.EVENTUAL else None
        if roles is None:
            return RegionStatus(mode=self.mode, region=self.region)
        return RegionStatus(mode=self.mode, region=self.region, **roles.model_dump())

    def fail_over(self, request: FailoverRequest, *, by: Attribution, tenant: str) -> FailoverResult:
        """Make `request.to` active; Conflict when refused, when another failover changed the roles first, and when
        this request wrote the handover (ask again once replication has caught up). Its audit record, attributed to
        `by` (an admin) in the admin's `tenant`, goes in the same write."""
        roles = self.records.roles()
        replication = self._replication(roles, request.to)
        plan = plan_failover(
            self.mode,
            roles,
            request.to,
            self.regions,
            caught_up=replication.caught_up,
            force=request.force,
            now=self.clock.now(),
        )
        if not isinstance(plan, FailoverPlan):
            why = f": {replication.reason}" if replication.reason and roles is not None and roles.handing_over else ""
            raise Conflict(f"failover to {request.to} refused: {plan.value}{why}")
        audit = (
            self.audit.item(
                by,
                tenant=tenant,
                action="region.failover",
                resource=AuditResource(kind="region", id=request.to),
                before=plan.previous,
                after=plan.roles,
            )
            if self.audit is not None
            else None
        )
        if not self.records.fail_over(plan, audit=audit):
            raise Conflict("another failover changed the regions' roles first; read them and try again")
        if plan.handover:
            logger.warning(
                "region handover: no region active until replication has caught up",
                extra={"by": by.actor.model_dump(mode="json"), "to": request.to, "epoch": plan.roles.epoch},
            )
            raise Conflict(
                f"handing over from {plan.roles.handing_over_from} to {request.to} (epoch {plan.roles.epoch}, no "
                f"region active): {FailoverRefusal.NOT_CAUGHT_UP.value}; asking again completes it"
            )
        twice = possibly_twice(plan, self._runs_not_ended()) if plan.forced else []
        result = FailoverResult(
            active_region=plan.roles.active_region,
            epoch=plan.roles.epoch,
            since=plan.roles.since,
            previous_region=(plan.previous.active_region or plan.previous.handing_over_from) if plan.previous else None,
            forced=plan.forced,
            possibly_twice=twice,
        )
        actor = by.actor.model_dump(mode="json")
        logger.warning(
            "region failover",
            extra={
                "by": actor,
                "active_region": result.active_region,
                "epoch": result.epoch,
                "previous_region": result.previous_region,
                "forced": result.forced,
                "possibly_twice_count": len(result.possibly_twice),
            },
        )
        detail = {"event_id": event_id("regions", RunEventKind.REGION_FAILOVER, round_=plan.roles.epoch), "by": actor}
        event = RunEvent(
            kind=RunEventKind.REGION_FAILOVER, time=plan.roles.since, detail=detail | result.model_dump(mode="json")
        )
        if not self.publish([event]):
            logger.error("Region Failover not taken by EventBridge; the failover stands")
        return result

    def _replication(self, roles: RegionRoles | None, to: str) -> Replication:
        """The probe's answer while `roles` hand over to `to`; otherwise there is nothing it could tell."""
        if roles is None or not roles.handing_over or roles.handing_over_to != to:
            return Replication(None)
        return self.probe.caught_up(roles)

    def _runs_not_ended(self) -> list[SeenRun]:
        """Every run the due index holds (a run keeps its entry until its outcome), as this region's replica has it."""
        seen: list[SeenRun] = []
        for shard in range(self.shards):
            for item in self.due.query_due(str(shard), FAR_FUTURE_MS, max_items=10**6):
                run_id, status = item.attrs.get("run_id"), item.attrs.get("status")
                if item.kind is ItemKind.RUN and run_id and status:
                    seen.append(SeenRun(str(run_id), RunStatus(status)))
        return seen


class Publisher(Protocol):
    def __call__(self, events: Sequence[RunEvent]) -> bool: ...
