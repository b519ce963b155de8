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
from tickwork.model.regions import FailoverPlan, RegionRoles
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
        attrs = deserialize(item)
        return RegionRoles(
            active_region=attrs["active_region"],
            epoch=int(attrs["epoch"]),
            since=datetime.fromisoformat(attrs["since"]),
        )

    def fail_over(self, plan: FailoverPlan) -> bool:
        """Write the plan's roles if the item is still the one it was planned from (its epoch, or none); False: another
        failover changed it first."""
        roles = plan.roles
        item = {
            **ROLES_KEY,
            **serialize({"active_region": roles.active_region, "epoch": roles.epoch, "since": iso(roles.since)}),
        }
        if plan.previous is None:
            won, _ = self._table.put_if_absent(item, return_old=False)
            return won
        won, _ = self._table.put_if(item, "epoch = :epoch", None, expression_values(epoch=plan.previous.epoch))
        return won
