"""Who may claim, lease and record outcomes in each RegionMode, and what a failover does (tickwork.model.regions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from tickwork.model.regions import (
    EVERY_REGION,
    FENCE_READ_TO_WRITE,
    REPLICATION_MARGIN,
    Admission,
    FailoverPlan,
    FailoverRefusal,
    RegionMode,
    RegionRoles,
    SeenRun,
    admission,
    plan_failover,
    possibly_twice,
    replication_caught_up,
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


def _handover(to: str = "us-east-2", roles: RegionRoles = A_ACTIVE) -> RegionRoles:
    plan = plan_failover(RegionMode.EVENTUAL, roles, to, REGIONS, caught_up=None, force=False, now=NOW)
    assert isinstance(plan, FailoverPlan)
    return plan.roles


def test_work_admitted_before_a_failover_is_fenced_after_it():
    admitted = admission(RegionMode.EVENTUAL, A_ACTIVE, "us-east-1")
    assert admitted is not None
    assert still_admitted(RegionMode.EVENTUAL, A_ACTIVE, "us-east-1", admitted)
    handover = _handover()
    plan = plan_failover(RegionMode.EVENTUAL, handover, "us-east-2", REGIONS, caught_up=True, force=False, now=NOW)
    assert isinstance(plan, FailoverPlan)
    assert not still_admitted(RegionMode.EVENTUAL, plan.roles, "us-east-1", admitted)
    # Failing back makes the first region active again, under a newer epoch: its old work stays fenced.
    back_handover = _handover("us-east-1", plan.roles)
    back = plan_failover(RegionMode.EVENTUAL, back_handover, "us-east-1", REGIONS, caught_up=True, force=False, now=NOW)
    assert isinstance(back, FailoverPlan)
    assert back.roles.epoch == 7
    assert not still_admitted(RegionMode.EVENTUAL, back.roles, "us-east-1", admitted)
    assert admission(RegionMode.EVENTUAL, back.roles, "us-east-1") == Admission(epoch=7)


def test_a_failover_hands_over_first_and_during_the_handover_no_region_works():
    for caught_up in (True, False, None):  # nothing is asked before the handover
        handover = plan_failover(
            RegionMode.EVENTUAL, A_ACTIVE, "us-east-2", REGIONS, caught_up=caught_up, force=False, now=NOW
        )
        assert handover == FailoverPlan(
            RegionRoles(epoch=4, since=NOW, handing_over_to="us-east-2", handing_over_from="us-east-1"),
            previous=A_ACTIVE,
            forced=False,
        )
        assert handover.handover
    roles = _handover()
    admitted = admission(RegionMode.EVENTUAL, A_ACTIVE, "us-east-1")
    assert admitted is not None
    for region in REGIONS:  # the old region stops at its next fence read; the target does not start yet
        assert admission(RegionMode.EVENTUAL, roles, region) is None
    assert not still_admitted(RegionMode.EVENTUAL, roles, "us-east-1", admitted)
    # A handover is completed only to its own target, unless forced.
    assert (
        plan_failover(RegionMode.EVENTUAL, roles, "us-west-2", REGIONS, caught_up=True, force=False, now=NOW)
        is FailoverRefusal.HANDING_OVER_ELSEWHERE
    )
    elsewhere = plan_failover(RegionMode.EVENTUAL, roles, "us-west-2", REGIONS, caught_up=None, force=True, now=NOW)
    assert isinstance(elsewhere, FailoverPlan)
    assert (elsewhere.roles.active_region, elsewhere.roles.epoch, elsewhere.forced) == ("us-west-2", 5, True)


def test_a_handover_completes_once_replication_has_caught_up_unless_forced():
    roles = _handover()
    assert (
        plan_failover(RegionMode.EVENTUAL, roles, "us-east-2", REGIONS, caught_up=False, force=False, now=NOW)
        is FailoverRefusal.NOT_CAUGHT_UP
    )
    assert (
        plan_failover(RegionMode.EVENTUAL, roles, "us-east-2", REGIONS, caught_up=None, force=False, now=NOW)
        is FailoverRefusal.CANNOT_TELL
    )
    done = plan_failover(RegionMode.EVENTUAL, roles, "us-east-2", REGIONS, caught_up=True, force=False, now=NOW)
    assert done == FailoverPlan(
        RegionRoles(active_region="us-east-2", epoch=5, since=NOW), previous=roles, forced=False
    )
    for caught_up in (False, None):
        forced = plan_failover(
            RegionMode.EVENTUAL, roles, "us-east-2", REGIONS, caught_up=caught_up, force=True, now=NOW
        )
        assert isinstance(forced, FailoverPlan)
        assert (forced.roles.active_region, forced.forced) == ("us-east-2", True)


def test_a_forced_failover_is_one_step():
    for caught_up in (False, None):
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
    waited = plan_failover(RegionMode.EVENTUAL, _handover(), "us-east-2", REGIONS, caught_up=True, force=False, now=NOW)
    assert isinstance(waited, FailoverPlan)
    assert possibly_twice(waited, runs) == []


def test_the_region_role_item_holds_a_region_and_a_positive_epoch():
    with pytest.raises(ValidationError):
        RegionRoles(active_region="", epoch=1, since=NOW)
    with pytest.raises(ValidationError):
        RegionRoles(active_region="us-east-1", epoch=0, since=NOW)
    with pytest.raises(ValidationError):  # neither an active region nor a handover
        RegionRoles(epoch=1, since=NOW)
    with pytest.raises(ValidationError):  # both
        RegionRoles(active_region="us-east-1", epoch=1, since=NOW, handing_over_to="a", handing_over_from="b")


FIRST_SEEN = NOW - timedelta(seconds=30)
WAIT = FENCE_READ_TO_WRITE + REPLICATION_MARGIN


def test_replication_has_caught_up_once_the_old_region_saw_the_handover_and_its_last_writes_replicated():
    handover = _handover()
    latency_ms = 2500.0
    done_at = FIRST_SEEN + WAIT + timedelta(milliseconds=latency_ms)
    before = replication_caught_up(handover, handover, FIRST_SEEN, latency_ms, done_at - timedelta(milliseconds=1))
    assert before.caught_up is False
    assert "waiting 1 s more" in before.reason
    assert replication_caught_up(handover, handover, FIRST_SEEN, latency_ms, done_at).caught_up is True
    # A later change of the item seen there (another failover since) shows the handover too.
    later = RegionRoles(active_region="us-east-2", epoch=handover.epoch + 1, since=NOW)
    assert replication_caught_up(handover, later, FIRST_SEEN, latency_ms, done_at).caught_up is True


def test_replication_has_not_caught_up_while_the_old_regions_replica_does_not_show_the_handover():
    handover = _handover()
    long_after = NOW + timedelta(hours=1)
    for seen in (None, A_ACTIVE):
        answer = replication_caught_up(handover, seen, None, 10.0, long_after)
        assert answer.caught_up is False
        assert "does not show the handover" in answer.reason


def test_without_a_replication_latency_it_cannot_be_told():
    handover = _handover()
    answer = replication_caught_up(handover, handover, FIRST_SEEN, None, NOW + timedelta(hours=1))
    assert answer.caught_up is None
    assert "no ReplicationLatency data" in answer.reason
