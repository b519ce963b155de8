"""The table and its conditional writes: the one place a conditional write's outcome is read.

Every state change in the store is a conditional write, and its condition is the lock. `Table` sends such a
write and answers whether it won; a failed condition comes back as False (with the item the condition saw,
where asked for), never as an exception, so no caller parses botocore errors. Any other error propagates.

A write refused, unapplied, because another holds its item (an audited change's transaction here, or a write in
another region of an MRSC global table, docs/regions.md) is sent again, a few times: its condition is read anew.

A write that is audited (docs/security.md "Audit trail") goes with its audit record's put in one
TransactWriteItems: both are written or neither; its outcome is read here too, a cancellation by the write's
condition being the same False. A transaction returns no item's attributes when it wins (no ReturnValues). A
table without transactions (RegionMode strong: an MRSC global table has none) is given `AuditedWrites` instead,
which writes the record as pending, then the change, then confirms it (tickwork.store.pending_audits), with the same
answers.

A write whose answer was lost (a read timeout, a connection reset) after DynamoDB applied it is sent again by the
SDK's retry, and the resend's condition fails: the write itself changed what it held on. A write that must not be
made twice carries its `Own` token, an attribute it sets to a value of this attempt alone: when its condition fails
and the item the condition saw holds that value, the write was applied (by the first send), and it is a win
(docs/architecture.md, "Lost answers").

`Table` also carries the client and the table name for plain reads, and the store's parts share one
instance: swapping its `client` (as a fault-injecting test does through `JobStore._db`) reaches them all.

With the expiry index (RegionMode strong, no TTL: docs/regions.md) every write it sends passes through its
`ExpiryMarks` (store/expiry), which adds the expiry bucket to a write of `expires_at`; without it nothing is added.

`Update` builds an UpdateItem whose clauses depend on the change (a run's outcome, a job's advance or replace, a
workflow run's steps): the one builder of the store's variable update expressions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from botocore.exceptions import ClientError

from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.expiry import ExpiryMarks

# How often an audited write's transaction is sent when another transaction in progress on its item cancels it.
TRANSACTION_CONFLICT_TRIES = 3

# What refuses a single write, unapplied, because another write holds its item: an audited change's transaction in
# this region (TransactionConflict, which the SDK does not retry), or, in an MRSC global table, a write in another
# region (ReplicatedWriteConflict, which the SDK retries within its attempts; docs/regions.md). Sent again, the
# write's condition is read anew, so a resend can neither apply it twice nor skip its lock.
CONFLICT_REFUSALS = frozenset({"TransactionConflictException", "ReplicatedWriteConflictException"})


@dataclass(frozen=True)
class Own:
    """A write's token: the attribute (a map's member: `map.name`) the write itself sets to `value`, unique to this
    attempt (a Put's item gets it from `Table`; an Update's expression sets it). Found so in the item a failed
    condition saw, the write was applied: a win."""

    attribute: str
    value: str
    # Other attributes the write sets that, with `value`, make the token unique (e.g. an outcome's instant and the
    # attempt it ends); checked, never written by `on`.
    with_: tuple[tuple[str, Any], ...] = ()

    def on(self, item: dict[str, Any]) -> dict[str, Any]:
        """An encoded item with the token in it (a top-level attribute)."""
        return item | serialize({self.attribute: self.value})

    def applied(self, seen: dict[str, Any]) -> bool:
        found: Any = seen
        for name in self.attribute.split("."):
            found = found.get(name) if isinstance(found, dict) else None
        return bool(found == self.value) and all(seen.get(name) == value for name, value in self.with_)


class Update:
    """An UpdateItem being built: its SET and REMOVE clauses, its conditions, and the names and values they use.
    Values are given as Python values (encoded by `attribute_values`), or `encoded` already (an item's own)."""

    def __init__(self, names: dict[str, str] | None = None, **values: Any) -> None:
        self.sets: list[str] = []
        self.removes: list[str] = []
        self.conditions: list[str] = []
        self.names: dict[str, str] = dict(names or {})
        self.values: dict[str, Any] = dict(values)  # by placeholder without its `:`
        self._encoded: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        """A placeholder for an attribute's name (a reserved word, or a map key such as a step id)."""
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attribute
        return placeholder

    def value(self, value: Any, *, encoded: bool = False) -> str:
        """A placeholder for a value."""
        placeholder = f"v{len(self.values) + len(self._encoded)}"
        if encoded:
            self._encoded[f":{placeholder}"] = value
        else:
            self.values[placeholder] = value
        return f":{placeholder}"

    def set(self, path: str, value: Any, *, encoded: bool = False) -> None:
        self.sets.append(f"{path} = {self.value(value, encoded=encoded)}")

    def expression(self) -> str:
        parts = []
        if self.sets:
            parts.append("SET " + ", ".join(self.sets))
        if self.removes:
            parts.append("REMOVE " + ", ".join(self.removes))
        return " ".join(parts)

    def condition(self) -> str:
        return " AND ".join(self.conditions)

    def attribute_values(self) -> dict[str, Any]:
        return expression_values(**self.values) | self._encoded


class AuditedWrites(Protocol):
    """How a table without transactions writes an audited change (tickwork.store.pending_audits.PendingAudits)."""

    def write(
        self, table: Table, operation: str, audit: dict[str, Any], params: dict[str, Any]
    ) -> tuple[bool, dict[str, Any]]: ...

    def settle_due(self, table: Table, *, limit: int = ...) -> int:
        """The records left pending by requests that have surely ended, settled (before they are listed)."""
        ...


# One piece over 250 lines: the one place a conditional write's outcome is read, a short method per kind of write.
class Table:
    """One DynamoDB table and the client that reaches it. Takes its client; builds none. `audited_writes`: how an
    audited write is made without a transaction (None: in one TransactWriteItems). `expiry`: the marks of the
    expiry index's bucket, where the table has that index (RegionMode strong)."""

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        audited_writes: AuditedWrites | None = None,
        expiry: ExpiryMarks | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.audited_writes = audited_writes
        self.expiry = expiry

    def put(self, item: dict[str, Any]) -> None:
        """PutItem, unconditional: for an item that is the same whoever writes it (an idempotent put)."""
        self.client.put_item(TableName=self.name, Item=self.expiry.item(item) if self.expiry else item)

    def put_if_absent(
        self,
        item: dict[str, Any],
        *,
        return_old: bool = True,
        audit: dict[str, Any] | None = None,
        own: Own | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """PutItem only where no item has this key. Returns (won, the existing item's attributes if lost).
        `audit`: the audit record's item, written in the same transaction. `own`: the put's token, added to `item`."""
        params: dict[str, Any] = {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"} if return_old or own else {}
        item = own.on(item) if own else item
        return self._attempt(
            "Put", None, audit, Item=item, ConditionExpression="attribute_not_exists(pk)", own=own, **params
        )

    def put_if(
        self,
        item: dict[str, Any],
        condition: str,
        names: dict[str, str] | None,
        values: dict[str, Any],
        *,
        return_old: bool = False,
        audit: dict[str, Any] | None = None,
        own: Own | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """PutItem under a condition. Returns (won, the item as its condition saw it if lost and `return_old`);
        a condition that does not hold is a False, never an exception. `audit`, `own`: as put_if_absent's."""
        params: dict[str, Any] = {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"} if return_old or own else {}
        return self._attempt(
            "Put",
            names,
            audit,
            Item=own.on(item) if own else item,
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
            own=own,
            **params,
        )

    def delete_if(
        self,
        key: dict[str, Any],
        condition: str,
        names: dict[str, str] | None,
        values: dict[str, Any],
        *,
        audit: dict[str, Any] | None = None,
    ) -> bool:
        """DeleteItem under a condition; False (never an exception) when the condition does not hold. `audit`: as
        put_if_absent's."""
        won, _ = self._attempt(
            "Delete", names, audit, Key=key, ConditionExpression=condition, ExpressionAttributeValues=values
        )
        return won

    def update_if(
        self,
        key: dict[str, Any],
        update: str,
        condition: str,
        names: dict[str, str] | None,
        values: dict[str, Any],
        *,
        audit: dict[str, Any] | None = None,
        own: Own | None = None,
    ) -> bool:
        """UpdateItem under a condition; False (never an exception) when the condition does not hold. `audit`: as
        put_if_absent's. `own`: the update's token, set by `update`."""
        returned = {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"} if own else {}
        won, _ = self._attempt("Update", names, audit, own=own, **_update(key, update, condition, values), **returned)
        return won

    def update_if_audited(
        self,
        key: dict[str, Any],
        update: str,
        condition: str,
        names: dict[str, str] | None,
        values: dict[str, Any],
        audit: dict[str, Any],
    ) -> tuple[bool, dict[str, Any]]:
        """`update_if` with its audit record's put in the same transaction. Returns (won, the item as its
        condition saw it if lost; empty: there was none)."""
        return self._attempt(
            "Update",
            names,
            audit,
            **_update(key, update, condition, values),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    def update_if_returning_old(
        self,
        key: dict[str, Any],
        update: str,
        condition: str,
        names: dict[str, str] | None,
        values: dict[str, Any],
        *,
        own: Own | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """`update_if` that also returns the item as it was: before the update if it won, as its condition saw
        it if it lost (empty: there was none). `own`: as update_if_returning_new's (a win whose answer was lost
        returns the item as the update left it, holding the token)."""
        return self._update_returning("ALL_OLD", names, own, **_update(key, update, condition, values))

    def update_if_returning_new(
        self,
        key: dict[str, Any],
        update: str,
        condition: str,
        names: dict[str, str] | None,
        values: dict[str, Any],
        *,
        own: Own | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """`update_if` that also returns the item: as the update left it if it won, as its condition saw it if it
        lost (empty: there was none). Either way the caller has the current item without another read. `own`: the
        update's token, set by `update` (then a win whose answer was lost returns the item as its resend saw it)."""
        return self._update_returning("ALL_NEW", names, own, **_update(key, update, condition, values))

    def _update_returning(
        self, returned: str, names: dict[str, str] | None, own: Own | None, **params: Any
    ) -> tuple[bool, dict[str, Any]]:
        return self._attempt(
            "Update",
            names,
            None,
            own=own,
            ReturnValues=returned,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **params,
        )

    def write_if(self, operation: str, *, own: Own | None = None, **params: Any) -> tuple[bool, dict[str, Any]]:
        """One conditional write (`operation`: Put, Update or Delete) of the request's parameters but the table's
        name, unaudited: (won, the returned attributes if won, else the item its condition saw if asked for).
        `own`: the write's token, which its parameters write."""
        return self._attempt(operation, None, None, own=own, **params)

    def query_all(self, key_condition: str, values: dict[str, Any]) -> list[dict[str, Any]]:
        """Every item of the table (not an index) matching the key condition, as attributes: consistent reads,
        one Query per 1 MB."""
        params: dict[str, Any] = {
            "TableName": self.name,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeValues": serialize(values),
            "ConsistentRead": True,
        }
        found: list[dict[str, Any]] = []
        while True:
            page = self.client.query(**params)
            found += [deserialize(i) for i in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return found
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def batch_get(
        self, keys: list[dict[str, Any]], *, projection: str | None = None, names: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """The items of these keys that exist (BatchGetItem, consistent reads, 100 keys a request, unprocessed
        keys asked again), as attributes, in no particular order. `names`: the projection's placeholders. A key
        given twice is asked once: BatchGetItem refuses a request that names a key twice."""
        keys = list({json.dumps(key, sort_keys=True): key for key in keys}.values())
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {self.name: {"Keys": keys[start : start + 100], "ConsistentRead": True}}
            if projection:
                request[self.name]["ProjectionExpression"] = projection
            if names:
                request[self.name]["ExpressionAttributeNames"] = names
            while request:
                response = self.client.batch_get_item(RequestItems=request)
                found += [deserialize(item) for item in response.get("Responses", {}).get(self.name, [])]
                request = response.get("UnprocessedKeys") or {}
        return found

    def _attempt(
        self,
        operation: str,
        names: dict[str, str] | None,
        audit: dict[str, Any] | None,
        *,
        own: Own | None = None,
        **params: Any,
    ) -> tuple[bool, dict[str, Any]]:
        """(True, the returned attributes) if the write (`operation`: Put, Update or Delete) won, (False, the item
        its condition saw) if it failed; (True, that item) if it holds `own`, the write's own token. With `audit`,
        the write and the audit item's put are one transaction (idempotent: its token is the SDK's)."""
        if names:
            params["ExpressionAttributeNames"] = names
        if audit is not None and self.audited_writes is not None:
            # Its writes (the record's, the change's) come back through here, where their expiry is marked, once.
            return self.audited_writes.write(self, operation, audit, params)
        if self.expiry is not None:
            params = self.expiry.write(operation, params)
            audit = None if audit is None else self.expiry.item(audit)
        if audit is not None:
            return self._attempt_audited(operation, audit, params)
        write = {"Put": self.client.put_item, "Update": self.client.update_item, "Delete": self.client.delete_item}
        for tries_left in range(TRANSACTION_CONFLICT_TRIES - 1, -1, -1):
            try:
                response = write[operation](TableName=self.name, **params)
            except ClientError as exc:
                if _error_code(exc) in CONFLICT_REFUSALS and tries_left:
                    continue
                if not _is_condition_failure(exc):
                    raise
                seen = deserialize(exc.response.get("Item") or {})  # type: ignore[arg-type]
                return own is not None and own.applied(seen), seen
            return True, deserialize(response.get("Attributes") or {})
        raise AssertionError("unreachable: the last try returns or raises")  # pragma: no cover

    def _attempt_audited(
        self, operation: str, audit: dict[str, Any], params: dict[str, Any]
    ) -> tuple[bool, dict[str, Any]]:
        """The write and its audit record in one TransactWriteItems. The record's key is new (its id is random), so
        its own condition fails only if the id was taken: then the transaction is an error, not a lost write; or if
        the record is there already, written by the write that won before (an audit intent's confirm, the second
        time): the write's condition fails too, and that is a lost write. A
        transaction cancelled by another in progress on the item (TransactionConflict, which the SDK does not
        retry) is sent again, up to TRANSACTION_CONFLICT_TRIES times."""
        if "ReturnValues" in params:
            raise ValueError("a transaction returns no attributes of a written item")
        record = {
            "TableName": self.name,
            "Item": audit,
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        items = [{operation: {"TableName": self.name, **params}}, {"Put": record}]
        for tries_left in range(TRANSACTION_CONFLICT_TRIES - 1, -1, -1):
            try:
                self.client.transact_write_items(TransactItems=items)
            except ClientError as exc:
                reasons = exc.response.get("CancellationReasons") or []  # type: ignore[typeddict-item]
                if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException" or not reasons:
                    raise
                change, put = (reason.get("Code") for reason in reasons)
                if "TransactionConflict" in (change, put) and tries_left:
                    continue
                if change != "ConditionalCheckFailed" or put not in (None, "None", "ConditionalCheckFailed"):
                    raise
                return False, deserialize(reasons[0].get("Item") or {})
            return True, {}
        raise AssertionError("unreachable: the last try returns or raises")  # pragma: no cover


def _update(key: dict[str, Any], update: str, condition: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "Key": key,
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ExpressionAttributeValues": values,
    }


def _error_code(exc: ClientError) -> str | None:
    return exc.response.get("Error", {}).get("Code")


def _is_condition_failure(exc: ClientError) -> bool:
    return _error_code(exc) == "ConditionalCheckFailedException"
