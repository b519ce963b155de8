"""Earliest deadline first over the due entries a held-back tick chooses from (tickwork.tick.shares.candidate_of,
tickwork.tick.fairness): a run's entry (a workflow step's, or a job's re-send or parked retry) competes with the
deadline_at it records, as a job's entry does with its next run's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tickwork.model.clock import iso, to_ms
from tickwork.model.ids import ItemKind
from tickwork.store import DueItem
from tickwork.store.codec import ROOTS_DEADLINE_SECONDS
from tickwork.tick.fairness import allocate
from tickwork.tick.shares import candidate_of

NOW = datetime(2026, 11, 26, 2, 0, tzinfo=UTC)
WORKFLOW_RUN = f"w{'0' * 25}.{to_ms(NOW):013d}"


def _job(name: str, *, tenant: str = "a", within: int | None = None, priority: int = 5) -> DueItem:
    attrs: dict[str, Any] = {"job_id": name, "tenant": tenant, "priority": priority}
    if within is not None:
        attrs["deadline"] = {"within_seconds": within, "on_miss": "ALERT"}
    return DueItem(ItemKind.JOB, "0", to_ms(NOW) - 10_000, attrs)


def _run(run_id: str, *, tenant: str = "a", deadline_in: int | None = None, status: str = "QUEUED") -> DueItem:
    attrs: dict[str, Any] = {
        "run_id": run_id,
        "tenant": tenant,
        "priority": 5,
        "status": status,
        "scheduled_for": iso(NOW - timedelta(seconds=40)),
        "deadline_at": None if deadline_in is None else iso(NOW + timedelta(seconds=deadline_in)),
    }
    return DueItem(ItemKind.RUN, "0", to_ms(NOW), attrs)


def _chosen(items: list[DueItem], capacity: int) -> list[str]:
    candidates = [candidate_of(i, urgent_ms=to_ms(NOW + timedelta(seconds=60))) for i in items]
    allocation = allocate(candidates, capacity=capacity, weights={}, budgets={}, now_ms=to_ms(NOW), aging_after_ms=0)
    return [str(a.item.attrs.get("run_id") or a.item.attrs["job_id"]) for a in allocation.chosen]


def test_a_step_run_with_less_slack_goes_before_job_runs_with_more_in_a_held_back_tick() -> None:
    """The step's re-send is the newest entry, yet its run must end first: it takes the first slot."""
    step = _run(f"{WORKFLOW_RUN}.s-a", deadline_in=60)
    items = [_job("none"), _job("late", within=3000), step]
    assert _chosen(items, 2) == [step.attrs["run_id"], "late"]
    assert _chosen(items, 3) == [step.attrs["run_id"], "late", "none"]


def test_a_run_s_deadline_orders_it_within_its_tenant_s_share_only() -> None:
    """Tenant a's step run and job both have sooner deadlines than b's: a still gets its share, its least slack
    first, and b its own."""
    step = _run(f"{WORKFLOW_RUN}.s-a", deadline_in=60)
    items = [_job("a-job", within=120), step, _job("b-soon", tenant="b", within=600), _job("b-none", tenant="b")]
    assert _chosen(items, 2) == [step.attrs["run_id"], "b-soon"]


def test_a_run_without_a_deadline_keeps_its_place_after_those_with_one() -> None:
    """A job's re-send with no deadline (deadline_at null) competes as before: after deadlines, oldest first."""
    resend = _run(f"j{'1' * 25}.{to_ms(NOW):013d}")
    assert _chosen([resend, _job("soon", within=60), _job("none")], 2) == ["soon", "none"]


def _workflow(name: str, *, roots_within: int | None) -> DueItem:
    attrs: dict[str, Any] = {"job_id": name, "tenant": "a", "priority": 5}
    if roots_within is not None:
        attrs[ROOTS_DEADLINE_SECONDS] = roots_within
    return DueItem(ItemKind.WORKFLOW, "0", to_ms(NOW), attrs)


def test_a_workflow_whose_root_step_has_less_slack_is_claimed_before_jobs_with_more() -> None:
    """A workflow's entry competes with its soonest root step's deadline: the first runs its claim starts."""
    items = [_job("late", within=600), _job("none"), _workflow("workflow", roots_within=120)]
    assert _chosen(items, 2) == ["workflow", "late"]


def test_a_workflow_without_root_deadlines_competes_as_before() -> None:
    items = [_job("late", within=600), _workflow("workflow", roots_within=None)]
    assert _chosen(items, 1) == ["late"]
