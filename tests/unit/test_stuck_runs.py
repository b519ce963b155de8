"""Stuck runs (tickwork.tick.stuck): counted from the due entries a tick reads, with no read of their own; and
the runs a gate defers, counted by the executor at each deferral (tickwork.model.stuck)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.model.clock import iso, to_ms
from tickwork.model.ids import ItemKind
from tickwork.model.states import DeferReason, RunStatus
from tickwork.model.stuck import DEFERRALS_ASKED_FOR, held_back_stuck
from tickwork.store import DueItem
from tickwork.tick.stuck import StuckReason, stuck_run_of, stuck_runs

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _run(run_id: str, status: str, *, scheduled_ago: float, lease_ago: float | None = None) -> DueItem:
    attrs = {
        "run_id": run_id,
        "job_id": "j",
        "tenant": "acme",
        "status": status,
        "scheduled_for": iso(NOW - timedelta(seconds=scheduled_ago)),
    }
    if lease_ago is not None:
        attrs["lease_until_ms"] = to_ms(NOW - timedelta(seconds=lease_ago))
    return DueItem(ItemKind.RUN, "0", to_ms(NOW) - 1, attrs)


def test_queued_long_past_its_time_or_running_past_its_lease_is_stuck():
    items = [
        _run("queued-late", "QUEUED", scheduled_ago=301),
        _run("queued-recent", "QUEUED", scheduled_ago=299),
        _run("running-lapsed", "RUNNING", scheduled_ago=60, lease_ago=1),
        _run("running-live", "RUNNING", scheduled_ago=600, lease_ago=-30),
        _run("retrying", "RETRYING", scheduled_ago=3600),
        _run("failed-in-outbox", "FAILED", scheduled_ago=3600),
    ]
    assert stuck_runs(items, NOW) == ["queued-late", "running-lapsed"]


def test_entries_not_yet_due_and_jobs_are_not_counted():
    later = DueItem(
        ItemKind.RUN,
        "0",
        to_ms(NOW) + 1000,
        {"run_id": "r", "status": "QUEUED", "scheduled_for": iso(NOW - timedelta(hours=1))},
    )
    job = DueItem(ItemKind.JOB, "0", to_ms(NOW), {"job_id": "j"})
    assert stuck_runs([later, job], NOW) == []


def test_a_stuck_run_says_why_and_since_when_whenever_its_entry_is_due():
    queued = _run("queued-late", "QUEUED", scheduled_ago=301)
    lapsed = _run("running-lapsed", "RUNNING", scheduled_ago=60, lease_ago=1)
    later = DueItem(ItemKind.RUN, "0", to_ms(NOW) + 300_000, queued.attrs)  # re-sent: its entry is due later
    found = [stuck_run_of(item, NOW) for item in (queued, lapsed, later)]
    assert [(r.reason, r.since) for r in found if r] == [
        (StuckReason.QUEUED_PAST_THRESHOLD, NOW - timedelta(seconds=301)),
        (StuckReason.RUNNING_PAST_LEASE, NOW - timedelta(seconds=1)),
        (StuckReason.QUEUED_PAST_THRESHOLD, NOW - timedelta(seconds=301)),
    ]
    assert stuck_runs([later], NOW) == []  # the tick counts it when its entry comes due


def test_a_running_run_without_a_lease_and_a_run_not_yet_stuck_are_none():
    unleased = _run("running-unleased", "RUNNING", scheduled_ago=3600)
    assert stuck_run_of(unleased, NOW) is None
    assert stuck_run_of(_run("queued-recent", "QUEUED", scheduled_ago=299), NOW) is None


def test_a_run_a_gate_defers_is_stuck_held_back_when_queued_past_the_threshold_but_not_for_a_freeze():
    def stuck(status: RunStatus, ago: float, reason: DeferReason = DeferReason.CONCURRENCY_KEY) -> bool:
        return held_back_stuck(status, NOW - timedelta(seconds=ago), reason, NOW)

    assert stuck(RunStatus.QUEUED, 301)
    assert all(stuck(RunStatus.QUEUED, 301, reason) for reason in set(DeferReason) - DEFERRALS_ASKED_FOR)
    assert not stuck(RunStatus.QUEUED, 300)  # as the tick decides: more than 5 minutes
    assert not stuck(RunStatus.RETRYING, 3600)  # a retry's wait is not its scheduled time's
    assert not stuck(RunStatus.QUEUED, 3600, DeferReason.FREEZE)  # held to the freeze's end, as asked
