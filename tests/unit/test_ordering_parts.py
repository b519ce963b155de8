"""Ordering keys' pure parts: which key a new run is queued under (its own, or BUFFER_ALL's), which run blocks its
key, and the queue's sort keys (by scheduled time, then run id; no key's items inside another key's range)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.executor.ordering import blocks_key
from tickwork.model.policies import OrderingKey, OrderingOnFailure, OverlapPolicy, run_ordering
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.store.ordering import entry_sort, head_sort, queue_prefix

AT = datetime(2026, 11, 25, 12, tzinfo=UTC)


def _run(run_id: str, at: datetime = AT, status: RunStatus = RunStatus.QUEUED) -> Run:
    return Run(id=run_id, job_id="j1", tenant="t", scheduled_for=at, status=status)


def test_a_runs_own_key_wins_over_buffer_all():
    own = OrderingKey(key="ledger")
    assert run_ordering(own, OverlapPolicy.BUFFER_ALL, "j1") == own


def test_buffer_all_orders_by_the_jobs_id_and_lets_the_next_go_after_a_failure():
    assert run_ordering(None, OverlapPolicy.BUFFER_ALL, "j1") == OrderingKey(
        key="j1", on_failure=OrderingOnFailure.CONTINUE
    )


def test_no_key_and_another_overlap_policy_orders_nothing():
    for policy in (OverlapPolicy.ALLOW, OverlapPolicy.SKIP, OverlapPolicy.BUFFER_ONE, OverlapPolicy.CANCEL_OTHER):
        assert run_ordering(None, policy, "j1") is None


def test_buffer_all_takes_no_running_slot():
    assert not OverlapPolicy.BUFFER_ALL.takes_running_slot


def test_only_a_failed_run_under_block_blocks_its_key():
    assert blocks_key(_run("r", status=RunStatus.FAILED), OrderingOnFailure.BLOCK)
    assert not blocks_key(_run("r", status=RunStatus.FAILED), OrderingOnFailure.CONTINUE)
    for status in (RunStatus.SUCCEEDED, RunStatus.SKIPPED, RunStatus.RETRYING, RunStatus.QUEUED):
        assert not blocks_key(_run("r", status=status), OrderingOnFailure.BLOCK)
    assert not blocks_key(None, OrderingOnFailure.BLOCK)


def test_entries_sort_by_scheduled_time_then_run_id():
    later = entry_sort("k", _run("a", AT + timedelta(milliseconds=1)))
    tie_b, tie_c = entry_sort("k", _run("b")), entry_sort("k", _run("c"))
    assert sorted([later, tie_c, tie_b]) == [tie_b, tie_c, later]


def test_no_keys_items_fall_inside_another_keys_queue():
    # "a" and a key that starts with "a#Q#" would share a prefix without the key's length in front.
    tricky = "a#Q#0000000000000#x"
    assert not entry_sort(tricky, _run("r")).startswith(queue_prefix("a"))
    assert not head_sort("a").startswith(queue_prefix("a"))
    assert head_sort("a") < queue_prefix("a")  # the head never stands between the cursor and the queue
