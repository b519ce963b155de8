"""Who may claim, lease and record outcomes in each RegionMode, and what a failover does (tickwork.model.regions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from tickwork.model.regions import (
    EVERY_REGION,
    Admission,
    FailoverPlan,
    FailoverRefusal,
    RegionMode,
    RegionRoles,
    SeenRun,
    admission,
    plan_failover,
    possibly_twice,
    still_admitted,
)
from tickwork.model.states import RunStatus

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
REGIONS = ("us-east-1", "us-east-2", "us-west-2")
A_ACTIVE = RegionRoles(active_region="us-east-1", epoch=3, since=NOW - timedelta(days=1))


@pytest.mark.parametrize("mode", [RegionMode.SINGLE, RegionMode.STRONG])
def test_where_the_conditional_write_is_the_lock_every_region_works(mode):
    for roles in (None, A_ACTIVE):
        for region in REGIONS:
            assert admission(mode, roles, region) == EVERY_REGION
            assert still_admitted(mode, roles, region, EVERY_REGION)


def test_in_eventual_only_the_active_region_works_under_its_epoch():
    assert admission(RegionMode.EVENTUAL, A_ACTIVE, "us-east-1") == Admission(epoch=3)
    assert admission(RegionMode.EVENTUAL, A_ACTIVE, "us-east-2") is None
    # No region is active until a failover names one.
    assert admission(RegionMode.EVENTUAL, None, "us-east-1") is None


def test_work_admitted_before_a_failover_is_fenced_after_it():
    admitted = admission(RegionMode.EVENTUAL, A_ACTIVE, "us-east-1")
    assert admitted is not None
    assert still_admitted(RegionMode.EVENTUAL, A_ACTIVE, "us-east-1", admitted)
    plan = plan_failover(RegionMode.EVENTUAL, A_ACTIVE, "us-east-2", REGIONS, caught_up=True, force=False, now=NOW)
    assert isinstance(plan, FailoverPlan)
    assert not still_admitted(RegionMode.EVENTUAL, plan.roles, "us-east-1", admitted)
    # Failing back makes the first region active again, under a newer epoch: its old work stays fenced.
    back = plan_failover(RegionMode.EVENTUAL, plan.roles, "us-east-1", REGIONS, caught_up=True, force=False, now=NOW)
    assert isinstance(back, FailoverPlan)
    assert back.roles.epoch == 5
    assert not still_admitted(RegionMode.EVENTUAL, back.roles, "us-east-1", admitted)
    assert admission(RegionMode.EVENTUAL, back.roles, "us-east-1") == Admission(epoch=5)


def test_a_failover_waits_for_replication_unless_forced():
    for caught_up in (False, None):
        refused = plan_failover(
            RegionMode.EVENTUAL, A_ACTIVE, "us-east-2", REGIONS, caught_up=caught_up, force=False, now=NOW
        )
        assert refused is FailoverRefusal.NOT_CAUGHT_UP
        forced = plan_failover(
            RegionMode.EVENTUAL, A_ACTIVE, "us-east-2", REGIONS, caught_up=caught_up, force=True, now=NOW
        )
        assert forced == FailoverPlan(
            RegionRoles(active_region="us-east-2", epoch=4, since=NOW), previous=A_ACTIVE, forced=True
        )
    waited = plan_failover(RegionMode.EVENTUAL, A_ACTIVE, "us-east-2", REGIONS, caught_up=True, force=True, now=NOW)
    assert isinstance(waited, FailoverPlan)
    assert waited.forced is False  # forcing a failover that had nothing to wait for forces nothing


def test_the_first_activation_has_nothing_to_wait_for():
    plan = plan_failover(RegionMode.EVENTUAL, None, "us-east-1", REGIONS, caught_up=None, force=False, now=NOW)
    assert plan == FailoverPlan(RegionRoles(active_region="us-east-1", epoch=1, since=NOW), previous=None, forced=False)


@pytest.mark.parametrize(
    ("mode", "to", "refusal"),
    [
        (RegionMode.SINGLE, "us-east-2", FailoverRefusal.NOT_EVENTUAL),
        (RegionMode.STRONG, "us-east-2", FailoverRefusal.NOT_EVENTUAL),
        (RegionMode.EVENTUAL, "eu-west-1", FailoverRefusal.UNKNOWN_REGION),
        (RegionMode.EVENTUAL, "us-east-1", FailoverRefusal.ALREADY_ACTIVE),
    ],
)
def test_a_failover_is_refused(mode, to, refusal):
    assert plan_failover(mode, A_ACTIVE, to, REGIONS, caught_up=True, force=True, now=NOW) is refusal


def test_a_forced_failover_reports_the_runs_not_ended():
    runs = [
        SeenRun("r-running", RunStatus.RUNNING),
        SeenRun("r-retrying", RunStatus.RETRYING),
        SeenRun("r-done", RunStatus.SUCCEEDED),
        SeenRun("r-skipped", RunStatus.SKIPPED),
        SeenRun("a-queued", RunStatus.QUEUED),
    ]
    forced = plan_failover(RegionMode.EVENTUAL, A_ACTIVE, "us-east-2", REGIONS, caught_up=False, force=True, now=NOW)
    assert isinstance(forced, FailoverPlan)
    assert possibly_twice(forced, runs) == ["a-queued", "r-retrying", "r-running"]
    waited = plan_failover(RegionMode.EVENTUAL, A_ACTIVE, "us-east-2", REGIONS, caught_up=True, force=False, now=NOW)
    assert isinstance(waited, FailoverPlan)
    assert possibly_twice(waited, runs) == []


def test_the_region_role_item_holds_a_region_and_a_positive_epoch():
    with pytest.raises(ValidationError):
        RegionRoles(active_region="", epoch=1, since=NOW)
    with pytest.raises(ValidationError):
        RegionRoles(active_region="us-east-1", epoch=0, since=NOW)
