"""Make moto's TransactWriteItems undo a cancelled transaction by the items it touched, not by copying tables.

moto backs a transaction up by deep-copying every table it names before it starts, so each TransactWriteItems
costs time in proportion to the whole table: measured in the quick soak's moto server, half of its CPU went to
those copies, and a test with 500 jobs paid for each claim with a copy of 500 jobs and their runs. Here only the
items the transaction names are copied (at most 100, as DynamoDB allows), and a cancelled transaction puts those
back as they were. What a client sees is unchanged: all of the transaction's writes, or none of them, on the table
and on its stream.

Like moto_atomic, this changes no AWS API; it runs under the same one-request-at-a-time lock, so nothing else
sees the items between the writes and their undoing. The local moto server applies it in
`motoserver._prepare_moto`, the in-process suites in `moto_atomic.atomic_requests_in_process`.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import moto.dynamodb.models as moto_dynamodb
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

_MOTO_TRANSACT_WRITE_ITEMS = DynamoDBBackend.transact_write_items


def _deepcopy_but_tables(value: Any, memo: dict[int, Any] | None = None) -> Any:
    # moto's own backup, made a no-op: a table "copied" is the table itself, so "restoring" it changes nothing.
    return value if isinstance(value, Table) else copy.deepcopy(value, memo)


# moto's DynamoDB backend reaches `copy.deepcopy` through its module's `copy`; only its backup copies tables.
_COPY_BUT_TABLES = SimpleNamespace(deepcopy=_deepcopy_but_tables)

_Touched = tuple[Table, DynamoType, DynamoType | None, Any]


def _touched_items(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> list[_Touched]:
    """Each named item's table, key and a copy of it as it is now (None: absent). Entries moto will refuse
    (an unknown table, a key missing a part) are left for moto to refuse; they write nothing."""
    touched: list[_Touched] = []
    for entry in transact_items:
        op = next(iter(entry.values()), None)
        if not isinstance(op, dict):
            continue
        table = backend.tables.get(op.get("TableName", ""))
        if table is None:
            continue
        key = op.get("Key") or op.get("Item") or {}
        if table.hash_key_attr not in key or (table.range_key_attr and table.range_key_attr not in key):
            continue
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        current = table.get_item(hash_value, range_value)
        touched.append((table, hash_value, range_value, copy.deepcopy(current)))
    return touched


def _put_back(touched: list[_Touched]) -> None:
    for table, hash_value, range_value, before in reversed(touched):
        if range_value is None:
            if before is None:
                table.items.pop(hash_value, None)
            else:
                table.items[hash_value] = before
        elif before is None:
            table.items.get(hash_value, {}).pop(range_value, None)
        else:
            table.items[hash_value][range_value] = before


def _stream_lengths(touched: list[_Touched]) -> list[tuple[Any, int]]:
    """Each touched table's stream and how many records it holds now (tables without a stream: none)."""
    shards = {id(t.stream_shard): t.stream_shard for t, *_ in touched if t.stream_shard is not None}
    return [(shard, len(shard.items)) for shard in shards.values()]


def _transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    touched = _touched_items(self, transact_items)
    streams = _stream_lengths(touched)
    moto_copy = moto_dynamodb.copy  # type: ignore[attr-defined]
    moto_dynamodb.copy = _COPY_BUT_TABLES  # type: ignore[attr-defined,assignment]
    try:
        _MOTO_TRANSACT_WRITE_ITEMS(self, transact_items)
    except Exception:
        _put_back(touched)
        # moto streamed the writes it made before the failing one: a cancelled transaction wrote nothing, so its
        # stream records go too (a stream reader, such as the local replicator, would replay writes never made).
        for shard, length in streams:
            del shard.items[length:]
        raise
    finally:
        moto_dynamodb.copy = moto_copy  # type: ignore[attr-defined]


def roll_back_transactions_by_item() -> None:
    """Make moto undo a cancelled TransactWriteItems by the items it names (see above). Idempotent."""
    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]


def transactions_roll_back_by_item() -> bool:
    return DynamoDBBackend.transact_write_items is _transact_write_items


def moto_transaction_backups() -> None:
    """Undo `roll_back_transactions_by_item`: moto's own table copies."""
    DynamoDBBackend.transact_write_items = _MOTO_TRANSACT_WRITE_ITEMS  # type: ignore[method-assign]
