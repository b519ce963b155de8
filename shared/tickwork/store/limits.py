"""Limit items, in the tenant's partition (pk=TENANT#<tenant>), one per limited key:

- a semaphore (sk=LIMIT#CONCURRENCY#<key>, or LIMIT#TENANT_CONCURRENCY for the tenant's own quota): a map
  `holders` of holder -> the end of its hold (ms), a map `limits` of holder -> the limit its run declared, and a
  `version` every write bumps;
- a rate (sk=LIMIT#RATE#<key>): the GCRA's theoretical arrival time `tat` (ms).

Both keep `expires_at` a day past their last use (the table's TTL), so a key nobody uses any more goes away.
No lock service: every change is one conditional write, and the condition is the lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from tickwork.model.clock import to_ms
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.conditional import Table
from tickwork.store.tenants import tenant_key

TENANT_SEMAPHORE = "LIMIT#TENANT_CONCURRENCY"
# Lost races an acquire retries before it gives up (and its run is deferred as if the key were full): each
# lost race means another holder changed the map, so a few are plenty even with many executors.
ACQUIRE_ATTEMPTS = 5
IDLE_RETENTION = timedelta(days=1)
# How far apart the executors' clocks may be (ms). A rate's `tat` is written from one executor's clock and read
# against another's: one more than an interval and this ahead of the reader's clock was written by a clock ahead
# of it by more than this, and is clamped to the reader's own clock (LimitRecords.admit_rate).
MAX_CLOCK_SKEW_MS = 1000


def semaphore_sort(key: str) -> str:
    return f"LIMIT#CONCURRENCY#{key}"


def rate_sort(key: str) -> str:
    return f"LIMIT#RATE#{key}"


@dataclass(frozen=True)
class RateAdmission:
    admitted: bool
    wait_ms: int = 0  # refused: how long until the rate admits the next run


class LimitRecords:
    """The limit items of the table. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def acquire(self, tenant: str, sort: str, *, holder: str, limit: int, until: datetime, now: datetime) -> bool:
        """Take one of `limit` slots until `until`. A consistent read, then the map written back with its expired
        holders dropped, on the condition that nobody changed it meanwhile (its version); a lost race retries
        from the item the condition saw (no second read). False: as many live holders as the key's limit, or too
        many lost races.

        The key's limit is the smallest any run inside it (or this one) declared: jobs sharing a key with
        different limits each keep theirs, for no run is ever inside with more runs than its own limit allows."""
        key = tenant_key(tenant, sort)
        item = self._table.client.get_item(TableName=self._table.name, Key=key, ConsistentRead=True).get("Item")
        attrs = deserialize(item) if item else {}
        now_ms = to_ms(now)
        for _ in range(ACQUIRE_ATTEMPTS):
            # A holder whose hold has ended died without releasing (its lease ended too): its slot is free.
            holders = {h: int(end) for h, end in (attrs.get("holders") or {}).items() if int(end) >= now_ms}
            limits = {h: int(n) for h, n in (attrs.get("limits") or {}).items() if h in holders}
            if holder not in holders and len(holders) >= min([limit, *limits.values()]):
                return False
            holders[holder] = to_ms(until)
            limits[holder] = limit
            version = int(attrs.get("version", 0))
            new = {
                "pk": key["pk"]["S"],
                "sk": sort,
                "tenant": tenant,
                "holders": holders,
                "limits": limits,
                "version": version + 1,
                "expires_at": _expiry(max(holders.values())),
            }
            won, seen = self._table.put_if(
                serialize(new),
                "attribute_not_exists(version) OR version = :v",
                None,
                expression_values(v=version),
                return_old=True,
            )
            if won:
                return True
            attrs = seen
        return False

    def extend(self, tenant: str, sort: str, *, holder: str, until: datetime) -> bool:
        """The heartbeat's: the hold runs on with the lease. The version moves too, so an acquire that read the
        map before this cannot write the old end back. A hold that lapsed runs on if no acquire has dropped it
        since (nobody else was let in by it). False: the hold is gone (released, or lapsed and dropped)."""
        return self._table.update_if(
            tenant_key(tenant, sort),
            "SET holders.#h = :until, version = version + :one, expires_at = :exp",
            "attribute_exists(holders.#h)",
            {"#h": holder},
            expression_values(until=to_ms(until), one=1, exp=_expiry(to_ms(until))),
        )

    def release(self, tenant: str, sort: str, *, holder: str) -> None:
        """Give the slot back (no read: one conditional write; a hold already gone is nothing to do)."""
        self._table.update_if(
            tenant_key(tenant, sort),
            "REMOVE holders.#h SET version = version + :one",
            "attribute_exists(holders.#h)",
            {"#h": holder},
            expression_values(one=1),
        )

    def holders(self, tenant: str, sort: str) -> dict[str, int]:
        """The semaphore's holders and the ends of their holds (ms), expired ones included."""
        item = self._table.client.get_item(
            TableName=self._table.name, Key=tenant_key(tenant, sort), ConsistentRead=True
        ).get("Item")
        return {h: int(end) for h, end in (deserialize(item).get("holders") or {}).items()} if item else {}

    def admit_rate(self, tenant: str, sort: str, *, interval_ms: int, now: datetime) -> RateAdmission:
        """GCRA with no burst: admit when the theoretical arrival time `tat` has come, and move it one interval
        past now. One conditional write; a refusal returns the item its condition saw, so the refused run
        knows exactly how long to wait (tat - now) without a read.

        A `tat` more than an interval and MAX_CLOCK_SKEW_MS past now was written by a clock ahead of this one by
        more than the skew allowed: the run it admitted started before this read, so the next turn is at most an
        interval from now. It is clamped there (one more conditional write, only while nobody moved it), so a
        clock far ahead holds a key back by an interval and the skew at most, not by its error."""
        now_ms = to_ms(now)
        admitted, seen = self._table.update_if_returning_old(
            tenant_key(tenant, sort),
            "SET tat = :next, tenant = :tenant, expires_at = :exp",
            "attribute_not_exists(tat) OR tat <= :now",
            None,
            expression_values(next=now_ms + interval_ms, tenant=tenant, now=now_ms, exp=_expiry(now_ms + interval_ms)),
        )
        if admitted:
            return RateAdmission(True)
        tat = int(seen["tat"])
        if tat > now_ms + interval_ms + MAX_CLOCK_SKEW_MS:
            clamped = now_ms + interval_ms
            self._table.update_if(
                tenant_key(tenant, sort),
                "SET tat = :clamped",
                "tat = :seen",
                None,
                expression_values(clamped=clamped, seen=tat),
            )
            tat = clamped  # or what a racing writer set, which the next attempt meets
        return RateAdmission(False, wait_ms=max(1, tat - now_ms))


def _expiry(last_ms: int) -> int:
    return last_ms // 1000 + int(IDLE_RETENTION.total_seconds())
