"""The region-role item (pk=REGIONS, sk=ROLES): which region is active, and its epoch (docs/regions.md; RegionMode
eventual). One item, read with a consistent read of the local replica, and changed only by a failover: a conditional
write on the epoch it replaces, so two failovers racing from the same state make one change.

In an MREC global table the condition is evaluated against the local replica, like every other: a failover is run
against the region being made active, and a region learns of it when the item reaches its replica.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tickwork.model.clock import iso
from tickwork.model.regions import EVERY_REGION, Admission, FailoverPlan, RegionMode, RegionRoles, admission
from tickwork.observability import logger, metrics
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.conditional import Table

ROLES_KEY: dict[str, Any] = {"pk": {"S": "REGIONS"}, "sk": {"S": "ROLES"}}


class RegionRoleRecords:
    def __init__(self, table: Table) -> None:
        self._table = table

    def roles(self) -> RegionRoles | None:
        """The active region and epoch in this region's replica; None: no region made active yet."""
        item = self._table.client.get_item(TableName=self._table.name, Key=ROLES_KEY, ConsistentRead=True).get("Item")
        if not item:
            return None
        return roles_of(item)

    def fail_over(self, plan: FailoverPlan, *, audit: dict[str, Any] | None = None) -> bool:
        """Write the plan's roles if the item is still the one it was planned from (its epoch, or none); False: another
        failover changed it first. `audit`: its audit record's item, in the same transaction."""
        roles = plan.roles
        named = {"active_region": roles.active_region, **_handover_names(roles)}
        attrs = {"epoch": roles.epoch, "since": iso(roles.since)} | {k: v for k, v in named.items() if v is not None}
        item = {**ROLES_KEY, **serialize(attrs)}
        if plan.previous is None:
            won, _ = self._table.put_if_absent(item, return_old=False, audit=audit)
            return won
        won, _ = self._table.put_if(
            item, "epoch = :epoch", None, expression_values(epoch=plan.previous.epoch), audit=audit
        )
        return won


def _handover_names(roles: RegionRoles) -> dict[str, str | None]:
    return {"handing_over_to": roles.handing_over_to, "handing_over_from": roles.handing_over_from}


def roles_of(item: dict[str, Any]) -> RegionRoles:
    """The region-role item's roles (a GetItem's `Item`, of any region's replica)."""
    attrs = deserialize(item)
    return RegionRoles(
        active_region=attrs.get("active_region"),
        epoch=int(attrs["epoch"]),
        since=datetime.fromisoformat(attrs["since"]),
        handing_over_to=attrs.get("handing_over_to"),
        handing_over_from=attrs.get("handing_over_from"),
    )


class RegionFence:
    """This region's leave to claim, lease and record outcomes (tickwork.model.regions.admission), read from the
    region-role item when it is asked: one consistent GetItem in RegionMode eventual, none in the others (`records`
    None: a fence that never reads, OPEN_FENCE). Each refusal is logged and counted (`FencedByRegion`)."""

    def __init__(self, records: RegionRoleRecords | None, mode: RegionMode, region: str) -> None:
        self.records, self.mode, self.region = records, mode, region

    def admit(self, doing: str) -> Admission | None:
        """The epoch this region may work under now, to do `doing`; None: fenced."""
        if self.mode is not RegionMode.EVENTUAL or self.records is None:
            return EVERY_REGION
        admitted = admission(self.mode, self.records.roles(), self.region)
        if admitted is None:
            logger.warning("not the active region (docs/regions.md)", extra={"doing": doing, "region": self.region})
            metrics.add_metric(name="FencedByRegion", unit="Count", value=1)
        return admitted

    def still(self, admitted: Admission, doing: str) -> bool:
        """Whether work admitted under `admitted` may still `doing` (a side effect, or recording its outcome)."""
        return self.admit(doing) == admitted


OPEN_FENCE = RegionFence(None, RegionMode.SINGLE, "")
