"""The due index and the shard leases: how a tick finds claimable work and splits it with racing ticks.

`due-index` (sparse; due_shard, due_at ms) is the queue of claimable work: a job carries the keys while it is
ACTIVE with a next occurrence; a run carries them from its claim until its outcome (due_at = when to re-send
it if nobody has leased it, or if its lease lapsed with its message stranded: orphan recovery). A shard lease
is its own item (pk=SHARD#<n>, sk=LEASE).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from tickwork.model.blocking import OnBlocked
from tickwork.model.claim_plan import ClaimableJob
from tickwork.model.clock import from_ms, optional_instant, stored_instant, to_ms
from tickwork.model.freezes import EVERY_TENANT
from tickwork.model.ids import ItemKind
from tickwork.model.policies import (
    DEFAULT_MISFIRE_GRACE_SECONDS,
    BreakerState,
    CatchupPolicy,
    OrderingKey,
    OverlapPolicy,
    StartPrecision,
    run_ordering,
)
from tickwork.model.schedule import Schedule
from tickwork.model.states import JobState, RunStatus
from tickwork.store.codec import (
    ROOTS_DEADLINE_SECONDS,
    deserialize,
    expression_values,
    run_key,
    serialize,
    stored_forecasts,
)
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
# The due index projects only what a claim needs (never the payload): template.yaml must list the same. Not a
# run's `status` nor its `lease_until_ms`: the lease and each heartbeat change them and nothing else of the entry,
# so projecting them rewrote the entry at every start and beat (1 WRU each). A run's (or workflow run's) entry is
# read with its item's current status and lease instead (`with_current_status`), only when it is read: at its
# re-send time, or as a parked retry, which a run that settles in time never is. `not_before_ms` marks a parked
# retry among the entries not yet due (its write sets the due time too; the lease removes it only where set).
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
    "scheduled_for",
    "overlap",
    "catchup",
    "breaker",
    "type",
    "trigger",
    "created_at",
    "not_before_ms",
    "jitter_seconds",
    "start_precision",
    "deadline",
    "deadline_at",
    ROOTS_DEADLINE_SECONDS,
    "ordering",
    "calendars",
    "on_blocked",
    "tags",
    "forecasts",
    "dispatch_order",
    "notify",
)


def postpone_due(
    table: Table, key: dict[str, Any], statuses: Sequence[StrEnum], *, expected_due_at: int, new_due_at: int
) -> bool:
    """Move an item's due time from `expected_due_at` to `new_due_at` while its status is one of `statuses`; only
    the caller whose write moves it acts on the item now."""
    among = {f"status{i}": status.value for i, status in enumerate(statuses)}
    return table.update_if(
        key,
        "SET due_at = :new",
        f"#status IN ({', '.join(f':{name}' for name in among)}) AND due_at = :old",
        {"#status": "status"},
        expression_values(new=new_due_at, old=expected_due_at, **among),
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

    def claimable(self) -> ClaimableJob:
        """The job (or workflow) this entry projects, as the claim plan reads it."""
        a = self.attrs
        return ClaimableJob(
            job_id=a["job_id"],
            tenant=a["tenant"],
            priority=int(a.get("priority", 5)),
            schedule=Schedule.model_validate(a["schedule"]),
            version=int(a["version"]),
            next_run_at=from_ms(self.due_at),
            created_at=stored_instant(a["created_at"]),
            misfire_grace=timedelta(seconds=int(a.get("misfire_grace_seconds", DEFAULT_MISFIRE_GRACE_SECONDS))),
            paused_at=optional_instant(a.get("paused_at")),
            resumed_at=optional_instant(a.get("resumed_at")),
            kind=self.kind,
            catchup=CatchupPolicy(a.get("catchup", _default_catchup(self.kind))),
            state=JobState(a.get("state", JobState.ACTIVE.value)),
            breaker=BreakerState.model_validate(a["breaker"]) if a.get("breaker") else None,
            jitter_seconds=int(a.get("jitter_seconds", 0)),
            precise=a.get("start_precision") == StartPrecision.PRECISE.value,
            deadline_seconds=int(a["deadline"]["within_seconds"]) if a.get("deadline") else None,
            ordering=_ordering(a) if self.kind is ItemKind.JOB else None,
            calendars=tuple(a.get("calendars") or ()),
            on_blocked=OnBlocked(a.get("on_blocked", OnBlocked.SKIP.value)),
            tags=tuple(sorted((a.get("tags") or {}).items())),
            forecasts=stored_forecasts(a) if self.kind is ItemKind.JOB else None,
            notify=tuple(a["notify"]) if a.get("notify") is not None else None,
        )


def _ordering(attrs: dict[str, Any]) -> OrderingKey | None:
    """A job's runs' ordering key, from its own `ordering` or its overlap BUFFER_ALL."""
    own = OrderingKey.model_validate(attrs["ordering"]) if attrs.get("ordering") else None
    return run_ordering(own, OverlapPolicy(attrs.get("overlap", OverlapPolicy.ALLOW.value)), attrs["job_id"])


def _default_catchup(kind: ItemKind) -> str:
    """A job item written before catch-up existed reads as the job default; a workflow's as what it did."""
    return (CatchupPolicy.LATEST if kind is ItemKind.JOB else CatchupPolicy.ALL).value


# What a run's entry is read with from its item (`with_current_status`): what the index does not project.
CURRENT_STATUS = ("status", "lease_until_ms")
_HAS_STATUS = (ItemKind.RUN, ItemKind.WORKFLOW_RUN)


class DueIndex:
    """Reads of the due index, the shard leases, and moving an unleased run's re-send time."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def with_current_status(self, items: list[DueItem]) -> list[DueItem]:
        """`items`, each run's and workflow run's with its item's status and lease (one consistent BatchGetItem
        per 100 of them; none when there are none). An entry whose item is gone is left out. The decisions made
        on them are conditional writes on the item (`postpone_due`), so a status read here that has moved on
        since only loses the write, as an index entry's did."""
        keyed = [i for i in items if i.kind in _HAS_STATUS]
        if not keyed:
            return items
        keys = [{"pk": {"S": i.attrs["pk"]}, "sk": {"S": i.attrs["sk"]}} for i in keyed]
        names = {f"#a{n}": name for n, name in enumerate(("pk", "sk", *CURRENT_STATUS))}
        found = self._table.batch_get(keys, projection=", ".join(names), names=names)
        current = {(f["pk"], f["sk"]): f for f in found}
        out: list[DueItem] = []
        for item in items:
            if item.kind not in _HAS_STATUS:
                out.append(item)
            elif (now := current.get((item.attrs["pk"], item.attrs["sk"]))) is not None:
                attrs = {k: v for k, v in item.attrs.items() if k not in CURRENT_STATUS}
                attrs.update({k: now[k] for k in CURRENT_STATUS if k in now})
                out.append(DueItem(item.kind, item.shard, item.due_at, attrs))
        return out

    def query_due(
        self, shard: str, until_ms: int, *, page_size: int = 200, max_items: int = 5000, runs_status: bool = True
    ) -> Iterator[DueItem]:
        """Due entries of one shard, oldest first, paginated; with `runs_status`, runs' with their current status
        (`with_current_status`; a reader of jobs alone need not pay for it)."""
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
            entries = [deserialize(raw) for raw in page.get("Items", [])][: max_items - seen]
            seen += len(entries)
            due = [DueItem(ItemKind(a["kind"]), shard, int(a["due_at"]), a) for a in entries]
            yield from self.with_current_status(due) if runs_status else due
            if seen >= max_items or "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def actionable(self, shard: str, now_ms: int, until_ms: int, *, max_items: int) -> list[DueItem]:
        """What a tick acts on in one shard: the jobs (and workflows) due by `until_ms`, the entries due by
        `now_ms`, and the parked retries (RETRYING) due by `until_ms`, sent ahead like a claimed run. Only the runs
        due, and those not yet due that may be parked retries (a `not_before`), are read with their status."""
        read = self.query_due(shard, until_ms, max_items=max_items, runs_status=False)
        return [
            i
            for i in self.with_current_status(
                [i for i in read if i.kind.scheduled or i.due_at <= now_ms or "not_before_ms" in i.attrs]
            )
            if i.kind.scheduled or i.due_at <= now_ms or i.attrs.get("status") == RunStatus.RETRYING.value
        ]

    def tenant_runs_due(self, tenant: str, shard: str, until_ms: int, *, max_read: int) -> tuple[list[DueItem], bool]:
        """A tenant's runs (EVERY_TENANT: every tenant's) among one shard's entries due by `until_ms`, oldest
        first, and whether every entry was read: the query reads (and pays for) the other tenants' entries and the
        jobs' too, at most `max_read` of them, and returns only the tenant's runs."""
        every = tenant == EVERY_TENANT
        kwargs: dict[str, Any] = {
            "TableName": self._table.name,
            "IndexName": DUE_INDEX,
            "KeyConditionExpression": "due_shard = :s AND due_at <= :u",
            "FilterExpression": "#kind = :run" if every else "#kind = :run AND tenant = :t",
            "ExpressionAttributeNames": {"#kind": "kind"},
            "ExpressionAttributeValues": expression_values(
                s=shard, u=until_ms, run=ItemKind.RUN.value, **({} if every else {"t": tenant})
            ),
        }
        found: list[DueItem] = []
        read = 0
        while read < max_read:
            page = self._table.client.query(**kwargs, Limit=min(200, max_read - read))
            read += int(page.get("ScannedCount", 0))
            found += self.with_current_status(
                [DueItem(ItemKind.RUN, shard, int(a["due_at"]), a) for a in map(deserialize, page.get("Items", []))]
            )
            if "LastEvaluatedKey" not in page:
                return found, True
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found, False

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
        unsettled = (RunStatus.QUEUED, RunStatus.RETRYING, RunStatus.RUNNING)
        return postpone_due(
            self._table, run_key(run_id), unsettled, expected_due_at=expected_due_at, new_due_at=new_due_at
        )
