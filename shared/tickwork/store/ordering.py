"""Ordering key items, in the tenant's partition (pk=TENANT#<tenant>), per key (docs/fairness.md, "Ordering keys"):

- the queue: one entry per run (sk=ORDER#<key's length>#<key>#Q#<scheduled ms, 13 digits>#<run id>), written when
  the run is created, so that runs sort by (scheduled time, run id);
- the head (sk=ORDER#<key's length>#<key>#HEAD): the run whose turn it is (`holder`, with its entry's sort key and
  its `on_failure`), `blocked` while that run has FAILED and holds the key back, and `after`, the sort key of the
  last entry the key has passed (its run ended). The queue's first pending run is one Query (sk > after, Limit 1).

Entries are never deleted (no role may delete an item): the cursor passes them, and they expire ENTRY_RETENTION
after they were written (the table's TTL). The key's length comes first, so no key's items share a prefix with
another key's. Every change of the head is one conditional write: the condition is the lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import to_ms
from tickwork.model.policies import OrderingKey, OrderingOnFailure
from tickwork.model.run import Run
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.conditional import Table
from tickwork.store.tenants import tenant_key

# An entry outlives its run's wait by far: one still pending then (a key blocked for weeks) is written again by its
# run's next look (tickwork.executor.ordering).
ENTRY_RETENTION = timedelta(days=35)


def _key_sort(key: str) -> str:
    return f"ORDER#{len(key)}#{key}"


def queue_prefix(key: str) -> str:
    return f"{_key_sort(key)}#Q#"


def head_sort(key: str) -> str:
    return f"{_key_sort(key)}#HEAD"


def entry_sort(key: str, run: Run) -> str:
    """A run's place in its key's queue: by scheduled time, then run id."""
    return f"{queue_prefix(key)}{to_ms(run.scheduled_for):013d}#{run.id}"


@dataclass(frozen=True)
class QueueEntry:
    run_id: str
    sort: str
    on_failure: OrderingOnFailure
    created_ms: int
    skipped: bool = False  # its run FAILED and the user skipped it: it blocks nothing


@dataclass(frozen=True)
class Head:
    """The run whose turn it is (None: nobody's; the first entry's run may take it)."""

    holder: str | None = None
    holder_sort: str | None = None
    on_failure: OrderingOnFailure = OrderingOnFailure.BLOCK
    blocked: bool = False
    after: str | None = None  # the last entry passed: the queue's pending runs come after it


class OrderingRecords:
    """The ordering key items of the table. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def enqueue(self, run: Run, *, now: datetime) -> None:
        """The run's entry in its key's queue, if it has none (idempotent: a run put again, by a second backfill of
        its occurrence, keeps the entry it has, which a skip may have marked skipped, and audited)."""
        ordering = run.ordering
        assert ordering is not None
        sort = entry_sort(ordering.key, run)
        item = {
            **{k: v["S"] for k, v in tenant_key(run.tenant, sort).items()},
            "tenant": run.tenant,
            "run_id": run.id,
            "on_failure": ordering.on_failure.value,
            "created_ms": to_ms(now),
            "expires_at": int((now + ENTRY_RETENTION).timestamp()),
        }
        self._table.put_if_absent(serialize(item), return_old=False)

    def first(self, tenant: str, key: str, *, after: str | None) -> QueueEntry | None:
        """The key's first entry past `after` (None: from the start): one consistent Query, Limit 1."""
        response = self._table.client.query(
            TableName=self._table.name,
            KeyConditionExpression="pk = :pk AND sk > :after",
            ExpressionAttributeValues=expression_values(
                pk=tenant_key(tenant, "")["pk"]["S"], after=after or queue_prefix(key)
            ),
            ConsistentRead=True,
            Limit=1,
        )
        items = response.get("Items") or []
        attrs = deserialize(items[0]) if items else {}
        if not str(attrs.get("sk", "")).startswith(queue_prefix(key)):
            return None  # past the queue's end: the next item is another key's, or not a key's
        return QueueEntry(
            run_id=attrs["run_id"],
            sort=attrs["sk"],
            on_failure=OrderingOnFailure(attrs.get("on_failure", OrderingOnFailure.BLOCK.value)),
            created_ms=int(attrs.get("created_ms", 0)),
            skipped=bool(attrs.get("skipped")),
        )

    def head(self, tenant: str, key: str) -> Head:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=tenant_key(tenant, head_sort(key)), ConsistentRead=True
        ).get("Item")
        attrs = deserialize(item) if item else {}
        return Head(
            holder=attrs.get("holder"),
            holder_sort=attrs.get("holder_sort"),
            on_failure=OrderingOnFailure(attrs.get("on_failure", OrderingOnFailure.BLOCK.value)),
            blocked=bool(attrs.get("blocked")),
            after=attrs.get("after"),
        )

    def take(self, tenant: str, ordering: OrderingKey, *, run_id: str, sort: str, blocked: bool = False) -> bool:
        """The key's turn for `run_id` (running, or `blocked` by its failure), if nobody else has it. Taking it
        again as its holder is how a retried blocker unblocks the key."""
        return self._table.update_if(
            tenant_key(tenant, head_sort(ordering.key)),
            "SET holder = :run, holder_sort = :sort, on_failure = :on_failure, blocked = :blocked, tenant = :tenant",
            "attribute_not_exists(holder) OR holder = :run",
            None,
            expression_values(
                run=run_id, sort=sort, on_failure=ordering.on_failure.value, blocked=blocked, tenant=tenant
            ),
        )

    def block(self, tenant: str, key: str, *, run_id: str) -> bool:
        """The holder FAILED: the key is blocked. False if it was already, or the turn is not the run's."""
        return self._table.update_if(
            tenant_key(tenant, head_sort(key)),
            "SET blocked = :yes",
            "holder = :run AND blocked = :no",
            None,
            expression_values(run=run_id, yes=True, no=False),
        )

    def give_back(self, tenant: str, key: str, *, run_id: str, passed: str | None = None) -> bool:
        """The turn given back by (or for) its holder `run_id`, only while it is that run's; `passed`: the sort
        key of the holder's entry, whose run has ended, which the cursor then passes (never moving back)."""
        release = "REMOVE holder, holder_sort, on_failure, blocked"
        if passed is not None and self._table.update_if(
            tenant_key(tenant, head_sort(key)),
            f"SET #after = :passed {release}",
            "holder = :run AND (attribute_not_exists(#after) OR #after < :passed)",
            {"#after": "after"},
            expression_values(run=run_id, passed=passed),
        ):
            return True
        return self._table.update_if(
            tenant_key(tenant, head_sort(key)), release, "holder = :run", None, expression_values(run=run_id)
        )

    def pass_first(self, tenant: str, key: str, *, sort: str, seen_after: str | None) -> bool:
        """The cursor past the queue's first entry `sort` (its run ended without holding the turn, or was never
        created), while nobody holds the turn and nobody moved the cursor since it was read."""
        seen = "attribute_not_exists(#after)" if seen_after is None else "#after = :seen"
        values = {"sort": sort} if seen_after is None else {"sort": sort, "seen": seen_after}
        return self._table.update_if(
            tenant_key(tenant, head_sort(key)),
            "SET #after = :sort, tenant = :tenant",
            f"attribute_not_exists(holder) AND {seen}",
            {"#after": "after"},
            expression_values(tenant=tenant, **values),
        )

    def mark_skipped(self, tenant: str, sort: str, *, audit: dict[str, Any] | None = None) -> bool:
        """The user skipped the entry's FAILED run: it no longer blocks its key. False: no such entry. `audit`: the
        skip's audit record's item, in the same transaction, written only by the skip that marks it first (one
        marked already is a True that changes nothing and records nothing)."""
        if audit is None:
            return self._table.update_if(
                tenant_key(tenant, sort),
                "SET skipped = :yes",
                "attribute_exists(run_id)",
                None,
                expression_values(yes=True),
            )
        won, seen = self._table.update_if_audited(
            tenant_key(tenant, sort),
            "SET skipped = :yes",
            "attribute_exists(run_id) AND attribute_not_exists(skipped)",
            None,
            expression_values(yes=True),
            audit,
        )
        return won or bool(seen.get("skipped"))
