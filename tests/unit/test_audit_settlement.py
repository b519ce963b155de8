"""The settlement of an audited change's pending record without a transaction (tickwork.model.audit_settlement),
and the pure parts of its writes (tickwork.store.pending_audits): the mark in an update expression, the record's
key in the mark, the pending record's item."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tickwork.model.audit_settlement import SETTLES_AFTER, PendingState, Settlement, settlement
from tickwork.store.codec import serialize
from tickwork.store.pending_audits import marker_of, pending_item, record_key, with_marker

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
PAST = NOW - timedelta(seconds=1)


def state(**changed: object) -> PendingState:
    fields: dict[str, object] = {
        "pending": True,
        "settles_after": PAST,
        "operation": "Update",
        "told_marked": False,
        "item_marked": False,
    }
    return PendingState(**(fields | changed))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "settled"),
    [
        (state(pending=False, item_marked=True), Settlement.CONFIRMED),
        (state(settles_after=NOW + timedelta(seconds=1), item_marked=True), Settlement.YOUNG),
        (state(item_marked=True), Settlement.CONFIRM),
        (state(operation="Put", item_marked=True), Settlement.CONFIRM),
        (state(), Settlement.NOT_HAPPENED),
        (state(operation="Put"), Settlement.NOT_HAPPENED),
        (state(operation="Delete", item_marked=True), Settlement.FINISH_DELETE),
        (state(operation="Delete", item_marked=True, told_marked=True), Settlement.FINISH_DELETE),
        (state(operation="Delete", told_marked=True), Settlement.CONFIRM),
        (state(operation="Delete"), Settlement.NOT_HAPPENED),
        (state(operation="Update", told_marked=True), Settlement.NOT_HAPPENED),  # only a delete is told
        (state(settles_after=NOW), Settlement.NOT_HAPPENED),  # due at its bound
        (state(settled=True), Settlement.NOT_HAPPENED_BEFORE),
        (state(settled=True, item_marked=True), Settlement.NOT_HAPPENED_BEFORE),
    ],
)
def test_a_pending_record_is_settled_by_its_items_mark_once_its_request_has_surely_ended(given, settled) -> None:
    assert settlement(given, NOW) is settled


def test_the_bound_exceeds_the_longest_function_that_makes_audited_writes() -> None:
    assert timedelta(seconds=900) < SETTLES_AFTER  # the executor's longest timeout, Lambda's ceiling


@pytest.mark.parametrize(
    ("update", "marked"),
    [
        ("SET v = :v", "SET audit_pending = :audit_marker, v = :v"),
        ("SET a = :a REMOVE b", "SET audit_pending = :audit_marker, a = :a REMOVE b"),
        ("REMOVE b SET a = :a", "REMOVE b SET audit_pending = :audit_marker, a = :a"),
        ("REMOVE b", "REMOVE b SET audit_pending = :audit_marker"),
        ("ADD #n :one", "ADD #n :one SET audit_pending = :audit_marker"),
        ("ADD #SET :one", "ADD #SET :one SET audit_pending = :audit_marker"),
    ],
)
def test_an_update_sets_the_mark_in_its_one_set_clause(update: str, marked: str) -> None:
    assert with_marker(update) == marked


def test_the_mark_names_its_records_key_whatever_the_tenant() -> None:
    record = serialize({"pk": "AUDIT#a|b#c", "sk": "1795264322000#a01abc"})
    assert record_key(marker_of(record)) == {"pk": record["pk"], "sk": record["sk"]}


def test_a_pending_record_is_out_of_the_listings_and_the_archive_and_names_its_change() -> None:
    audit = serialize(
        {"pk": "AUDIT#t", "sk": "s", "kind": "AUDIT", "tenant_key": "AUDIT#*", "tenant_sort": "s", "due_shard": "AUDIT"}
    )
    target = serialize({"pk": "JOB#j", "sk": "JOB"})
    item = pending_item(audit, target, "Update", NOW)
    assert "tenant_key" not in item
    assert "tenant_sort" not in item
    assert item["due_shard"] == {"S": "AUDIT_PENDING"}
    assert item["kind"] == {"S": "AUDIT_PENDING"}
    assert (item["target_pk"], item["target_sk"], item["target_op"]) == ({"S": "JOB#j"}, {"S": "JOB"}, {"S": "Update"})
    assert item["pending"] == {"BOOL": True}
