"""Audited writes without a transaction (RegionMode strong: an MRSC global table has none, docs/regions.md section
2): the audit record is written first as pending (an intent), then the change, marked with the record, then the
record confirmed and the mark cleared. `Table` sends an audited write here when it has no transactions; in
`single` and `eventual` nothing here runs.

The sequence, for a write (Put, Update or Delete) and its record:

1. the record, pending: its item (tickwork.store.audit.AuditItems) kept out of the listings and the archive (no
   tenant-index keys, `kind` AUDIT_PENDING, its due-index partition AUDIT_PENDING at `settles_after`), naming the
   target item's key and the operation; put only where its key is new;
2. the change, under its own condition and `attribute_not_exists(audit_pending)`, setting `audit_pending` = the
   record's key on the item (a Put in its item, an Update in a SET clause). A Delete is an Update that sets the
   mark under the delete's condition (and the item's existence), the record told `marked`, then the Delete
   conditioned on the mark;
3. won: the record confirmed (its pending attributes removed, its listing and archive keys set as the transaction
   writes them), then the mark cleared (conditioned on being this record's). Lost: the record settled as not
   happened (`settled`, out of the settling's partition, expiring a day later: the functions' roles delete no
   item but a calendar and a released idempotency key), and the write answers (False, the item seen) as the
   transaction did.

A request that dies anywhere in between leaves a pending record, and maybe a marked item. Once its request has
surely ended (`settles_after`) it is settled by what the item says (tickwork.model.audit_settlement): marked with
this record, the change happened (a Delete then finishes), so the record is confirmed and the mark cleared; not
marked, it did not happen (a Delete told `marked` did), so the record is settled as not happened. It is settled
when a later audited write on the item finds the mark (then that write is tried again), and when the audit is
listed (`settle_due`, before the Query). A mark whose record is still young fails that write as a conflicting
write does (its caller reads the item and tries again, or answers Conflict). A pending record is never listed.

Cost of an audited create: 4 writes (record, change, confirm, clear), against a transaction's 2 items billed
double (about the same WRU, docs/regions.md section 2); a Delete 5.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from tickwork.model.audit_settlement import SETTLES_AFTER, PendingState, Settlement, settlement
from tickwork.model.clock import Clock, from_ms, to_ms
from tickwork.observability import logger
from tickwork.store.audit import ALL_TENANTS, ARCHIVE_SHARD, SETTLED_INTENT_KEPT_SECONDS, due_items
from tickwork.store.codec import deserialize, expression_values, serialize
from tickwork.store.conditional import Own, Table

MARKER = "audit_pending"  # on a changed item: the key of its pending audit record ("<pk>|<sk>")
PENDING_SHARD = "AUDIT_PENDING"  # the due-index partition of the pending records, due at their `settles_after`
PENDING_KIND = "AUDIT_PENDING"
NOT_HAPPENED_KIND = "AUDIT_NOT_HAPPENED"  # a pending record settled: its change did not happen
# How often a write finding another record's mark settles it and is tried again.
SETTLE_TRIES = 3
_PENDING_ATTRIBUTES = ("pending", "settles_after", "target_pk", "target_sk", "target_op", "marked")


class AuditIdTaken(Exception):
    """A pending record's put found an item at its key: its id (random) was taken."""


def marker_of(record: dict[str, Any]) -> str:
    """The mark a change carries for its record (a record's item's attributes, or its encoded item)."""
    pk, sk = (record[k]["S"] if isinstance(record[k], dict) else record[k] for k in ("pk", "sk"))
    return f"{pk}|{sk}"


def record_key(marker: str) -> dict[str, Any]:
    pk, sk = marker.rsplit("|", 1)  # a record's sort key (digits, `#`, its id) has no `|`
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def pending_item(audit: dict[str, Any], target: dict[str, Any], operation: str, settles_at: datetime) -> dict[str, Any]:
    """A record's item (encoded) as pending: out of tenant-index (admins' listing) and the archive's partition."""
    item = {k: v for k, v in audit.items() if k not in ("tenant_key", "tenant_sort")}
    return item | serialize(
        {
            "kind": PENDING_KIND,
            "pending": True,
            "settles_after": to_ms(settles_at),
            "target_pk": target["pk"]["S"],
            "target_sk": target["sk"]["S"],
            "target_op": operation,
            "due_shard": PENDING_SHARD,
            "due_at": to_ms(settles_at),
        }
    )


def with_marker(update: str) -> str:
    """An update expression that also sets the mark (`:audit_marker`): in its SET clause, or a SET clause added."""
    words = update.split(" ")
    if "SET" in words:
        at = words.index("SET")
        return " ".join([*words[: at + 1], f"{MARKER} = :audit_marker,", *words[at + 1 :]])
    return f"{update} SET {MARKER} = :audit_marker"


class PendingAudits:
    """The intent-then-confirm sequence of an audited write, and the settling of what a dead request left."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def write(
        self, table: Table, operation: str, audit: dict[str, Any], params: dict[str, Any]
    ) -> tuple[bool, dict[str, Any]]:
        """As a transaction of the write and its record: (True, {}) if it won, (False, the item its condition saw,
        if asked for) if it lost."""
        if "ReturnValues" in params:
            raise ValueError("an audited write returns no attributes of a written item")
        wants_seen = "ReturnValuesOnConditionCheckFailure" in params
        target = {k: (params["Item"] if operation == "Put" else params["Key"])[k] for k in ("pk", "sk")}
        intent = pending_item(audit, target, operation, self.clock.now() + SETTLES_AFTER)
        won, _ = table.put_if_absent(intent, return_old=False)
        if not won:
            raise AuditIdTaken(marker_of(intent))
        marker = marker_of(intent)
        change_op, change = _marked_change(operation, params, marker)
        seen: dict[str, Any] = {}
        for _ in range(SETTLE_TRIES):
            # The mark is the change's token (store/conditional.Own): found on the item, the change was applied, its
            # answer lost and its resend refused by the mark itself.
            won, seen = table.write_if(change_op, own=Own(MARKER, marker), **change)
            if won or seen.get(MARKER) is None or not self._settle_mark(table, str(seen[MARKER]), target):
                break
        if not won:
            _not_happened(table, marker, self.clock.now())
            return False, seen if wants_seen else {}
        if operation == "Delete":
            _tell_marked(table, marker)
            deleted, left = table.write_if(
                "Delete",
                Key=target,
                ConditionExpression=f"{MARKER} = :m",
                ExpressionAttributeValues=expression_values(m=marker),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            if not deleted and left:
                # The item there without its mark (an unaudited put replaced it meanwhile): the delete did not happen.
                # Gone, it was deleted by a try whose answer was lost (nothing else deletes a marked item).
                _not_happened(table, marker, self.clock.now())
                return False, {}
        _confirm(table, deserialize(intent))
        if operation != "Delete":
            _clear_mark(table, target, marker)
        return True, {}

    def settle(self, table: Table, record: dict[str, Any]) -> Settlement:
        """A pending record (its item's attributes) settled by what its target item says, once its request has
        surely ended (tickwork.model.audit_settlement): what was done."""
        now = self.clock.now()
        state = PendingState(
            pending=bool(record.get("pending")),
            settles_after=from_ms(int(record.get("settles_after", 0))),
            operation=str(record.get("target_op", "")),
            told_marked=bool(record.get("marked")),
            item_marked=False,
            settled=bool(record.get("settled")),
        )
        done = settlement(state, now)
        if done in (Settlement.CONFIRMED, Settlement.NOT_HAPPENED_BEFORE, Settlement.YOUNG):
            return done
        marker = marker_of(record)
        target = {"pk": {"S": record["target_pk"]}, "sk": {"S": record["target_sk"]}}
        item = table.client.get_item(TableName=table.name, Key=target, ConsistentRead=True).get("Item")
        marked = item is not None and deserialize(item).get(MARKER) == marker
        done = settlement(replace(state, item_marked=marked), now)
        if done is Settlement.NOT_HAPPENED:
            _not_happened(table, marker, now)
            logger.info("pending audit record settled: its change did not happen", extra={"record": marker})
            return done
        if done is Settlement.FINISH_DELETE:
            table.delete_if(target, f"{MARKER} = :m", None, expression_values(m=marker))
        _confirm(table, record)
        if marked and done is Settlement.CONFIRM:
            _clear_mark(table, target, marker)
        return done

    def settle_due(self, table: Table, *, limit: int = 100) -> int:
        """The pending records whose requests have surely ended (up to `limit`, oldest first), settled; how many."""
        records = due_items(table, PENDING_SHARD, self.clock.now(), limit)
        return sum(self.settle(table, record) is not Settlement.YOUNG for record in records)

    def _settle_mark(self, table: Table, marker: str, target: dict[str, Any]) -> bool:
        """Another record's mark on the `target` item: True once it is settled and cleared (the write is tried
        again), False while its record is young (its request may still be running)."""
        stored = table.client.get_item(TableName=table.name, Key=record_key(marker), ConsistentRead=True).get("Item")
        record = deserialize(stored) if stored else None
        if record is not None and record.get("pending") and not record.get("settled"):
            return self.settle(table, record) is not Settlement.YOUNG
        # Confirmed, its request dead before it cleared the mark (or, never seen, a record settled as not happened,
        # or none: the mark is only a lock then).
        logger.info("audit mark cleared after its record", extra={"record": marker, "found": record is not None})
        _clear_mark(table, target, marker)
        return True


def _marked_change(operation: str, params: dict[str, Any], marker: str) -> tuple[str, dict[str, Any]]:
    """The write that makes the change and marks its item (for a Delete, the mark alone), and its operation."""
    change = dict(params) | {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    change["ConditionExpression"] = f"({params['ConditionExpression']}) AND attribute_not_exists({MARKER})"
    mark = expression_values(audit_marker=marker)
    if operation == "Put":
        change["Item"] = params["Item"] | serialize({MARKER: marker})
        return "Put", change
    change["ExpressionAttributeValues"] = dict(params.get("ExpressionAttributeValues") or {}) | mark
    if operation == "Update":
        change["UpdateExpression"] = with_marker(params["UpdateExpression"])
        return "Update", change
    change["ConditionExpression"] += " AND attribute_exists(pk)"  # a mark must not create the item it deletes
    change["UpdateExpression"] = f"SET {MARKER} = :audit_marker"
    return "Update", change


def _tell_marked(table: Table, marker: str) -> None:
    """The record of a Delete told its item is marked: once the item is gone, the record says the delete happened."""
    table.update_if(
        record_key(marker), "SET marked = :yes", "attribute_exists(pending)", None, expression_values(yes=True)
    )


def _confirm(table: Table, record: dict[str, Any]) -> bool:
    """The record as the transaction writes it: in the listings (tenant-index) and the archive's partition."""
    sort = str(record["sk"])
    values = expression_values(kind="AUDIT", all=ALL_TENANTS, sort=sort, shard=ARCHIVE_SHARD, at=int(sort[:13]))
    update = (
        "REMOVE " + ", ".join(_PENDING_ATTRIBUTES) + " SET kind = :kind, tenant_key = :all, tenant_sort = :sort, "
        "due_shard = :shard, due_at = :at"
    )
    return table.update_if(record_key(marker_of(record)), update, "attribute_exists(pending)", None, values)


def _not_happened(table: Table, marker: str, now: datetime) -> None:
    """A pending record whose change did not happen: out of the settling's partition, `settled` not_happened (still
    pending, so never listed), removed a day later by expiry (`expires_at`): no role of the stack deletes an item
    it did not change (the redrive's intents, tickwork.store.audit, are kept as long)."""
    expires_at = to_ms(now) // 1000 + SETTLED_INTENT_KEPT_SECONDS
    table.update_if(
        record_key(marker),
        "REMOVE due_shard, due_at SET #settled = :outcome, expires_at = :expires, kind = :kind",
        "attribute_exists(pending) AND attribute_not_exists(#settled)",
        {"#settled": "settled"},
        expression_values(outcome="not_happened", expires=expires_at, kind=NOT_HAPPENED_KIND),
    )


def _clear_mark(table: Table, target: dict[str, Any], marker: str) -> bool:
    return table.update_if(target, f"REMOVE {MARKER}", f"{MARKER} = :m", None, expression_values(m=marker))
