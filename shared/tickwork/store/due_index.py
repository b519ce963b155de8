"""The due index and the shard leases: how a tick finds claimable work and splits it with racing ticks.

`due-index` (sparse; due_shard, due_at ms) is the queue of claimable work: a job carries the keys while it is
ACTIVE with a next occurrence; a run carries them from its claim until its outcome (due_at = when to re-send
it if nobody has leased it, or if its lease lapsed with its message stranded: orphan recovery). A shard lease
is its own item (pk=SHARD#<n>, sk=LEASE).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import to_ms
from tickwork.model.states import RunStatus
from tickwork.store.codec import ItemKind, deserialize, expression_values, run_key, serialize
from tickwork.store.conditional import Table

DUE_INDEX = "due-index"
# The table's other index (tenant_key, tenant_sort): a tenant's jobs and FAILED runs, read by `listings`.
TENANT_INDEX = "tenant-index"
# It projects only what its queries filter on, none of which a claim or a run's outcome changes (version,
# next_run_at, the due keys, counters): so those writes do not rewrite the job's index entry (1 WRU each). A
# listing reads the page's full items with one BatchGetItem. template.yaml must list the same.
TENANT_INDEX_PROJECTION = (
    "kind",
    "job_id",
    "run_id",
    "tenant",
    "state",
    "type",
    "name",
    "tags",
    "schedule",
    "counted_for",
)
# The due index projects only what a claim needs (never the payload): template.yaml must list the same.
DUE_INDEX_PROJECTION = (
    "kind",
    "job_id",
    "run_id",
    "tenant",
    "priority",
    "schedule",
    "state",
    "version",
    "next_run_at",
    "misfire_grace_seconds",
    "paused_at",
    "resumed_at",
    "status",
    "scheduled_for",
    "overlap",
    "catchup",
    "breaker",
    "type",
    "trigger",
    "created_at",
    "lease_until_ms",
    "jitter_seconds",
    "start_precision",
)


@dataclass(frozen=True)
class DueItem:
    """One entry of the due index, as projected (no payload)."""

    kind: ItemKind
    shard: str
    due_at: int
    attrs: dict[str, Any]

    @property
    def priority(self) -> int:
        return int(self.attrs.get("priority", 5))


class DueIndex:
    """Reads of the due index, the shard leases, and moving an unleased run's re-send time."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def query_due(self, shard: str, until_ms: int, *, page_size: int = 200, max_items: int = 5000) -> Iterator[DueItem]:
        """Due entries of one shard, oldest first, paginated."""
        kwargs: dict[str, Any] = {
            "TableName": self._table.name,
            "IndexName": DUE_INDEX,
            "KeyConditionExpression": "due_shard = :s AND due_at <= :u",
            "ExpressionAttributeValues": expression_values(s=shard, u=until_ms),
            "Limit": page_size,
        }
        seen = 0
        while True:
            page = self._table.client.query(**kwargs)
            for raw in page.get("Items", []):
                attrs = deserialize(raw)
                yield DueItem(ItemKind(attrs["kind"]), shard, int(attrs["due_at"]), attrs)
                seen += 1
                if seen >= max_items:
                    return
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def acquire_shard(self, shard: str, *, owner: str, now: datetime, lease_for: timedelta) -> bool:
        """A tick's short lease on a shard, so racing ticks split the shards instead of all walking the same
        items. Only an efficiency measure: the run's conditional put is what keeps claims exactly-once."""
        item = serialize(
            {"pk": f"SHARD#{shard}", "sk": "LEASE", "kind": "SHARD", "owner": owner, "until_ms": to_ms(now + lease_for)}
        )
        won, _ = self._table.put_if(
            item,
            "attribute_not_exists(pk) OR until_ms < :now OR #owner = :owner",
            {"#owner": "owner"},
            expression_values(now=to_ms(now), owner=owner),
        )
        return won

    def release_shard(self, shard: str, *, owner: str) -> None:
        self._table.update_if(
            {"pk": {"S": f"SHARD#{shard}"}, "sk": {"S": "LEASE"}},
            "SET until_ms = :zero",
            "#owner = :owner",
            {"#owner": "owner"},
            expression_values(zero=0, owner=owner),
        )

    def postpone_redispatch(self, run_id: str, *, expected_due_at: int, new_due_at: int) -> bool:
        """Move a run's re-send time (a run without an outcome: queued, retrying, or leased); only the tick
        that moves it re-sends it."""
        return self._table.update_if(
            run_key(run_id),
            "SET due_at = :new",
            "#status IN (:queued, :retrying, :running) AND due_at = :old",
            {"#status": "status"},
            expression_values(
                new=new_due_at,
                old=expected_due_at,
                queued=RunStatus.QUEUED.value,
                retrying=RunStatus.RETRYING.value,
                running=RunStatus.RUNNING.value,
            ),
        )
