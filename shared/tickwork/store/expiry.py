"""Expiry without TTL (RegionMode strong, docs/regions.md; the decisions in tickwork.model.expiry).

`ExpiryMarks` is the one place that decides what a write of `expires_at` also writes: `Table` (store/conditional)
passes every write through it when the table has the expiry index, so no writer of `expires_at` can forget the
bucket. A Put whose item has `expires_at` gets its `expiry_bucket`; an UpdateItem that SETs `expires_at` SETs the
bucket beside it; one that REMOVEs `expires_at` REMOVEs the bucket too (the item leaves the index). Without the
index (single, eventual: the table's TTL) `Table` holds none, and every request is as it was.

`ExpiredItems` is the sweep's I/O: the cursor item (pk=EXPIRY, sk=SWEPT: the first hour not known to be empty),
a Query of one bucket of the expiry index, and the conditional delete of an expired item (`expires_at < :now`: an
item whose expiry was moved on, or removed, since the index was read survives).
"""

from __future__ import annotations

import re
from typing import Any

from tickwork.model.clock import Clock
from tickwork.model.expiry import EXPIRY_BUCKET, EXPIRY_INDEX, expiry_bucket
from tickwork.store.codec import expression_values

EXPIRES_AT = "expires_at"
CURSOR_KEY = {"pk": {"S": "EXPIRY"}, "sk": {"S": "SWEPT"}}
_BUCKET_VALUE = ":expiry_bucket"


class ExpiryMarks:
    """Adds the expiry bucket to a write (DynamoDB JSON, as sent) that writes `expires_at`. `clock`: when the write
    is made (an expiry already past is bucketed in that hour, tickwork.model.expiry.expiry_bucket)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock

    def _written_at(self) -> int | None:
        return None if self.clock is None else int(self.clock.now().timestamp())

    def item(self, item: dict[str, Any]) -> dict[str, Any]:
        """A Put's item, with its bucket if it expires."""
        if EXPIRES_AT not in item:
            return item
        written_at = self._written_at()
        bucket = expiry_bucket(item["pk"]["S"], item["sk"]["S"], int(item[EXPIRES_AT]["N"]), written_at=written_at)
        return {**item, EXPIRY_BUCKET: {"S": bucket}}

    def write(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """A PutItem's, UpdateItem's or DeleteItem's parameters, with the bucket where they write `expires_at`."""
        if operation == "Put":
            return {**params, "Item": self.item(params["Item"])}
        if operation != "Update":
            return params
        expression: str = params["UpdateExpression"]
        names = [EXPIRES_AT, *(p for p, n in (params.get("ExpressionAttributeNames") or {}).items() if n == EXPIRES_AT)]
        attribute = "|".join(re.escape(name) for name in names)
        # A SET action (its path, `=`, a value placeholder); a REMOVE's path is followed by no `=`.
        set_action = re.compile(rf"(?:\bSET\s+|,\s*)(?:{attribute})\s*=\s*(:\w+)")
        removed = re.compile(rf"(?:\bREMOVE\s+|,\s*)(?:{attribute})\b(?!\s*=)")
        if match := set_action.search(expression):
            value = params["ExpressionAttributeValues"][match.group(1)]
            key = params["Key"]
            bucket = expiry_bucket(key["pk"]["S"], key["sk"]["S"], int(value["N"]), written_at=self._written_at())
            expression = f"{expression[: match.end()]}, {EXPIRY_BUCKET} = {_BUCKET_VALUE}{expression[match.end() :]}"
            values = {**params["ExpressionAttributeValues"], _BUCKET_VALUE: {"S": bucket}}
            return {**params, "UpdateExpression": expression, "ExpressionAttributeValues": values}
        if match := removed.search(expression):
            expression = f"{expression[: match.end()]}, {EXPIRY_BUCKET}{expression[match.end() :]}"
            return {**params, "UpdateExpression": expression}
        return params


class ExpiredItems:
    """The expiry index's reads, the sweep's cursor and its deletes. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def swept_before(self) -> int | None:
        """The cursor: the first hour not known to be empty (None: no sweep has run)."""
        response = self._table.client.get_item(TableName=self._table.name, Key=CURSOR_KEY, ConsistentRead=True)
        item = response.get("Item")
        return int(item["hour"]["N"]) if item else None

    def move_cursor(self, was: int | None, to: int) -> bool:
        """The cursor to `to`, if it is still `was` (a tick racing another moves it once); False if it moved."""
        condition = "attribute_not_exists(pk)" if was is None else "#hour = :was"
        values = expression_values(to=to, **({} if was is None else {"was": was}))
        return bool(self._table.update_if(CURSOR_KEY, "SET #hour = :to", condition, {"#hour": "hour"}, values))

    def expired(
        self, bucket: str, now_s: int, *, limit: int, start: dict[str, Any] | None = None
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """Up to `limit` keys of the bucket's items expired by `now_s` (the index is eventually consistent: an entry
        may be of an item deleted or extended a moment ago), and where the next page starts (None: the last)."""
        params: dict[str, Any] = {
            "TableName": self._table.name,
            "IndexName": EXPIRY_INDEX,
            "KeyConditionExpression": "#bucket = :bucket AND expires_at < :now",
            "ExpressionAttributeNames": {"#bucket": EXPIRY_BUCKET},
            "ExpressionAttributeValues": expression_values(bucket=bucket, now=now_s),
            "Limit": limit,
        }
        if start:
            params["ExclusiveStartKey"] = start
        page = self._table.client.query(**params)
        keys = [{"pk": item["pk"], "sk": item["sk"]} for item in page.get("Items", [])]
        return keys, page.get("LastEvaluatedKey")

    def delete_expired(self, key: dict[str, Any], now_s: int) -> bool:
        """Delete the item if it has expired by `now_s`; False if it is gone, or its expiry was moved or removed."""
        return bool(self._table.delete_if(key, "expires_at < :now", None, expression_values(now=now_s)))
