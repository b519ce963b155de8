"""Expiry without TTL (RegionMode strong): the buckets, the hours a sweep reads, its cursor and budget
(tickwork.model.expiry), and the bucket `ExpiryMarks` adds to a write of `expires_at` (tickwork.store.expiry)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tickwork.model.clock import FakeClock
from tickwork.model.expiry import (
    EXPIRY_SHARDS,
    SWEEP_LAG,
    TICK_SECONDS,
    SweepBudget,
    bucket_name,
    buckets_of,
    expiry_bucket,
    expiry_hour,
    hours_to_sweep,
    swept_past,
)
from tickwork.store.codec import serialize
from tickwork.store.expiry import ExpiryMarks

NOW = datetime(2026, 11, 29, 12, 30, tzinfo=UTC)
HOUR = expiry_hour(int(NOW.timestamp()))  # 12:00 UTC's hour
AT = int(datetime(2026, 12, 29, 7, 59, 59, tzinfo=UTC).timestamp())


def test_a_bucket_names_the_utc_hour_of_the_expiry_and_a_shard_of_the_key():
    bucket = expiry_bucket("JOB#j1", "RUN#0001", AT)
    prefix, hour, shard = bucket.split("#")
    assert (prefix, hour) == ("X", "2026-12-29T07")
    assert 0 <= int(shard) < EXPIRY_SHARDS
    assert expiry_bucket("JOB#j1", "RUN#0001", AT - 3599) == bucket  # the same hour, the same key: the same bucket
    assert expiry_bucket("JOB#j1", "RUN#0001", AT + 1).startswith("X#2026-12-29T08#")


def test_one_hours_expiries_spread_over_every_shard():
    shards = {expiry_bucket(f"JOB#j{i}", "RUN#0001", AT).rsplit("#", 1)[1] for i in range(200)}
    assert shards == {str(s) for s in range(EXPIRY_SHARDS)}


def test_a_sweep_reads_every_bucket_of_an_hour():
    assert buckets_of(HOUR) == [bucket_name(HOUR, s) for s in range(EXPIRY_SHARDS)]
    assert buckets_of(HOUR)[0] == "X#2026-11-29T12#0"


def test_the_first_sweep_reads_the_hour_before_now():
    assert hours_to_sweep(None, NOW, SweepBudget()) == range(HOUR - 1, HOUR)


def test_a_sweep_reads_from_its_cursor_up_to_the_hour_before_now():
    assert hours_to_sweep(HOUR - 5, NOW, SweepBudget()) == range(HOUR - 5, HOUR)


def test_the_hour_now_is_in_is_never_swept():
    assert list(hours_to_sweep(HOUR, NOW, SweepBudget())) == []
    assert list(hours_to_sweep(HOUR + 1, NOW, SweepBudget())) == []  # a clock behind the one that moved it


def test_the_hour_just_ended_is_swept_only_sweep_lag_after_its_end():
    ended = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    assert list(hours_to_sweep(HOUR - 1, ended + SWEEP_LAG - timedelta(seconds=1), SweepBudget())) == []
    assert hours_to_sweep(HOUR - 1, ended + SWEEP_LAG, SweepBudget()) == range(HOUR - 1, HOUR)


def test_an_expiry_already_past_when_written_goes_in_the_hour_of_the_write():
    # The cursor may have passed the expiry's hour: never the write's (it moves only past hours ended before now).
    written = int(NOW.timestamp())
    past = written - 5 * 3600
    assert expiry_bucket("JOB#j1", "RUN#1", past, written_at=written).startswith("X#2026-11-29T12#")
    assert expiry_bucket("JOB#j1", "RUN#1", AT, written_at=written) == expiry_bucket("JOB#j1", "RUN#1", AT)
    marked = ExpiryMarks(FakeClock(NOW)).item(serialize({"pk": "JOB#j1", "sk": "RUN#1", "expires_at": past}))
    assert marked["expiry_bucket"]["S"].startswith("X#2026-11-29T12#")


def test_a_backlog_is_read_a_budget_of_hours_a_tick():
    assert hours_to_sweep(HOUR - 500, NOW, SweepBudget(hours=48)) == range(HOUR - 500, HOUR - 452)


@pytest.mark.parametrize(
    ("found_empty", "cursor"),
    [
        ([], HOUR - 5),
        ([True, True], HOUR - 3),
        ([True, False, True], HOUR - 4),  # the cursor never passes an hour that held something
        ([False, True], HOUR - 5),
    ],
)
def test_the_cursor_moves_past_the_leading_empty_hours_only(found_empty, cursor):
    assert swept_past(range(HOUR - 5, HOUR), found_empty) == cursor


def test_the_budget_is_of_deletes_and_of_time():
    budget = SweepBudget(deletes=10, seconds=5.0)
    assert budget.deletes_left(0, 0.0) == 10
    assert budget.deletes_left(7, 4.9) == 3
    assert budget.deletes_left(10, 1.0) == 0
    assert budget.deletes_left(12, 1.0) == 0
    assert budget.deletes_left(0, 5.0) == 0


def test_a_sweep_late_in_its_tick_has_less_time_and_past_the_ticks_share_none():
    assert SweepBudget(seconds=10.0).within_tick(5.0).seconds == 10.0
    assert SweepBudget(seconds=10.0).within_tick(40.0).seconds == TICK_SECONDS - 40.0
    late = SweepBudget(seconds=10.0).within_tick(50.0)
    assert late.seconds == 0.0
    assert late.deletes_left(0, 0.0) == 0
    assert late.deletes == SweepBudget().deletes


# ---------------------------------------------------------------- the marks: one place adds the bucket

KEY = {"pk": {"S": "JOB#j1"}, "sk": {"S": "RUN#0001"}}
BUCKET = {"S": expiry_bucket("JOB#j1", "RUN#0001", AT)}


def test_a_put_of_an_item_that_expires_gets_its_bucket():
    item = {**KEY, "expires_at": {"N": str(AT)}, "status": {"S": "SUCCEEDED"}}
    params = ExpiryMarks().write("Put", {"Item": item, "ConditionExpression": "attribute_not_exists(pk)"})
    assert params["Item"] == {**item, "expiry_bucket": BUCKET}
    assert params["ConditionExpression"] == "attribute_not_exists(pk)"


def test_a_put_of_an_item_that_does_not_expire_is_as_it_was():
    params = {"Item": {**KEY, "status": {"S": "QUEUED"}}}
    assert ExpiryMarks().write("Put", params) == params


@pytest.mark.parametrize(
    ("expression", "marked"),
    [
        ("SET expires_at = :e", "SET expires_at = :e, expiry_bucket = :expiry_bucket"),
        (
            "SET #s = :s, expires_at = :e REMOVE due_shard",
            "SET #s = :s, expires_at = :e, expiry_bucket = :expiry_bucket REMOVE due_shard",
        ),
        (
            "REMOVE due_shard, due_at SET expires_at = :e",
            "REMOVE due_shard, due_at SET expires_at = :e, expiry_bucket = :expiry_bucket",
        ),
        (
            "ADD #count :take SET expires_at = :e, tenant = :t",
            "ADD #count :take SET expires_at = :e, expiry_bucket = :expiry_bucket, tenant = :t",
        ),
        ("SET #x = :e", "SET #x = :e, expiry_bucket = :expiry_bucket"),  # by a name placeholder
    ],
)
def test_an_update_that_sets_expires_at_sets_its_bucket_beside_it(expression, marked):
    params = {
        "Key": KEY,
        "UpdateExpression": expression,
        "ExpressionAttributeNames": {"#x": "expires_at"},
        "ExpressionAttributeValues": {":e": {"N": str(AT)}},
    }
    written = ExpiryMarks().write("Update", params)
    assert written["UpdateExpression"] == marked
    assert written["ExpressionAttributeValues"] == {":e": {"N": str(AT)}, ":expiry_bucket": BUCKET}


@pytest.mark.parametrize(
    ("expression", "marked"),
    [
        ("SET a = :a REMOVE finished_at, expires_at", "SET a = :a REMOVE finished_at, expires_at, expiry_bucket"),
        ("REMOVE expires_at SET a = :a", "REMOVE expires_at, expiry_bucket SET a = :a"),
    ],
)
def test_an_update_that_removes_expires_at_removes_its_bucket(expression, marked):
    params = {"Key": KEY, "UpdateExpression": expression, "ExpressionAttributeValues": {":a": {"S": "x"}}}
    assert ExpiryMarks().write("Update", params)["UpdateExpression"] == marked


@pytest.mark.parametrize(
    "expression", ["SET lease_expires_at = :e", "SET a = :a, expires_at_hint = :e", "SET a = if_not_exists(b, :e)"]
)
def test_an_update_that_does_not_write_expires_at_is_as_it_was(expression):
    params = {"Key": KEY, "UpdateExpression": expression, "ExpressionAttributeValues": {":e": {"N": "1"}}}
    assert ExpiryMarks().write("Update", params) == params


def test_a_delete_is_as_it_was():
    params = {"Key": KEY, "ConditionExpression": "expires_at < :now"}
    assert ExpiryMarks().write("Delete", params) == params
