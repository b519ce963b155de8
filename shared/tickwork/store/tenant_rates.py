"""A tenant's dispatch counter per minute window (pk=TENANT#<tenant>, sk=RATE#<epoch minute>): its
`max_runs_per_minute` quota at dispatch.

A tick reserves the runs it is about to claim for a rate-limited tenant with one conditional ADD (only if the
window's count plus them stays within the limit); a tick that lost a race to another learns the count from the
failed condition and takes what is left. The counter never exceeds the limit, so racing ticks and job creation
together never dispatch more than the quota in a window. A reservation that ends up unused (a lost claim race)
is not handed back: the quota errs on the side of fewer runs. Each item expires (TTL) a few minutes after its
window.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tickwork.model.tenant_settings import rate_window
from tickwork.store.codec import expression_values
from tickwork.store.conditional import Table
from tickwork.store.tenants import tenant_key

RATE_ITEM_TTL = timedelta(minutes=10)
# The windows before now that `spent_windows` reads at most: those whose items the TTL keeps.
SPENT_LOOKBACK_WINDOWS = int(RATE_ITEM_TTL.total_seconds()) // 60
MAX_RESERVE_ATTEMPTS = 3  # each lost race means another claimer took part of the window: it only shrinks


class TenantRates:
    """The tenants' per-minute dispatch counters. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def reserve(self, tenant: str, *, want: int, limit: int, now: datetime) -> int:
        """Reserve up to `want` runs of this minute's window for the tenant, never past `limit`; returns how many
        it got (0 when the window is spent). One UpdateItem when uncontended."""
        window = rate_window(now)
        key = tenant_key(tenant, f"RATE#{window}")
        expires = (window + 1) * 60 + int(RATE_ITEM_TTL.total_seconds())
        take = min(want, limit)
        for _ in range(MAX_RESERVE_ATTEMPTS):
            if take <= 0:
                return 0
            won, seen = self._table.update_if_returning_new(
                key,
                "ADD #count :take SET expires_at = :expires, tenant = :tenant",
                "attribute_not_exists(#count) OR #count <= :most",
                {"#count": "count"},
                expression_values(take=take, most=limit - take, expires=expires, tenant=tenant),
            )
            if won:
                return take
            take = min(want, limit - int(seen.get("count", 0)))
        return 0

    def spent_windows(self, tenant: str, *, limit: int, since: datetime, now: datetime) -> set[int]:
        """The tenant's windows from `since`'s to the one before now's (the last SPENT_LOOKBACK_WINDOWS of them)
        whose count reached `limit`: when its quota held runs back. One consistent Query; none when the range is
        empty."""
        last = rate_window(now) - 1
        first = max(rate_window(since), last - SPENT_LOOKBACK_WINDOWS + 1)
        if first > last:
            return set()
        pk = tenant_key(tenant, "")["pk"]
        answer = self._table.client.query(
            TableName=self._table.name,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :first AND :last",
            ExpressionAttributeValues={
                ":pk": pk,
                ":first": {"S": f"RATE#{first}"},
                ":last": {"S": f"RATE#{last}"},
            },
            ExpressionAttributeNames={"#count": "count"},
            ProjectionExpression="sk, #count",
            ConsistentRead=True,
        )
        return {
            int(item["sk"]["S"].removeprefix("RATE#"))
            for item in answer.get("Items", [])
            if int(item.get("count", {}).get("N", 0)) >= limit
        }

    def used(self, tenant: str, now: datetime) -> int:
        """Runs dispatched for the tenant in this minute's window (a strongly consistent read)."""
        item = self._table.client.get_item(
            TableName=self._table.name,
            Key=tenant_key(tenant, f"RATE#{rate_window(now)}"),
            ConsistentRead=True,
            ProjectionExpression="#count",
            ExpressionAttributeNames={"#count": "count"},
        ).get("Item")
        return int(item["count"]["N"]) if item else 0
