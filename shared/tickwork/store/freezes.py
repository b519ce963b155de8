"""Freeze items, every tenant's in one partition (pk=FREEZES, sk=FREEZE#<id>): a tick reads them all with one
Query, whatever the number of tenants and jobs. An item stays a day past its end (TTL `expires_at`), so that a
tick late after it ended still finds what deferred a job's occurrences to its end."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import iso
from tickwork.model.freezes import Freeze
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.conditional import Table

FREEZES_PK = "FREEZES"
FREEZE_PREFIX = "FREEZE#"
KEPT_AFTER_END = timedelta(days=1)


def freeze_key(freeze_id: str) -> dict[str, Any]:
    return {"pk": {"S": FREEZES_PK}, "sk": {"S": FREEZE_PREFIX + freeze_id}}


def _expiry(freeze: Freeze) -> int:
    return int((freeze.ends_at + KEPT_AFTER_END).timestamp())


def _freeze(attrs: dict[str, Any]) -> Freeze:
    return Freeze.model_validate({k: v for k, v in attrs.items() if k not in ("pk", "sk", "expires_at")})


class FreezeRecords:
    """The freeze items of the table. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def put_new(self, freeze: Freeze) -> bool:
        attrs = {"pk": FREEZES_PK, "sk": FREEZE_PREFIX + freeze.id, **freeze.model_dump(mode="json")}
        won, _ = self._table.put_if_absent(serialize({**attrs, "expires_at": _expiry(freeze)}), return_old=False)
        return won

    def get(self, freeze_id: str) -> Freeze | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=freeze_key(freeze_id), ConsistentRead=True
        ).get("Item")
        return _freeze(deserialize(item)) if item else None

    def lift(self, freeze: Freeze, now: datetime) -> bool:
        """Ends it now, once, if it has not ended: False when it was lifted already or is over."""
        lifted = freeze.model_copy(update={"lifted_at": now})
        return self._table.update_if(
            freeze_key(freeze.id),
            "SET lifted_at = :now, expires_at = :exp",
            "attribute_exists(pk) AND attribute_not_exists(lifted_at) AND #until > :now",
            {"#until": "until"},
            expression_values(now=iso(now), exp=_expiry(lifted)),
        )

    def all(self) -> list[Freeze]:
        """Every freeze still kept (ended less than a day ago, or to come): one Query per 1 MB."""
        params: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": serialize({":pk": FREEZES_PK}),
            "ConsistentRead": True,
        }
        found: list[Freeze] = []
        while True:
            page = self._table.client.query(**params)
            found += [_freeze(deserialize(i)) for i in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return found
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
