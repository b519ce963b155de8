"""RegionRoleRecords against moto: the region-role item's first activation, a failover conditioned on the epoch it
replaces, and two failovers racing from the same state (docs/regions.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tickwork.model.regions import FailoverPlan, RegionMode, RegionRoles, plan_failover
from tickwork_local.runtime.regions import activate_first_region

from tests.harness import START

REGIONS = ("us-east-1", "us-east-2", "us-west-2")


def _plan(roles: RegionRoles | None, to: str, *, minutes: int = 0) -> FailoverPlan:
    plan = plan_failover(
        RegionMode.EVENTUAL, roles, to, REGIONS, caught_up=True, force=False, now=START + timedelta(minutes=minutes)
    )
    assert isinstance(plan, FailoverPlan)
    return plan


def test_no_region_is_active_until_the_first_failover_names_one(pipeline):
    regions = pipeline.services.store.regions
    assert regions.roles() is None
    first = _plan(None, "us-east-1")
    assert regions.fail_over(first)
    assert regions.roles() == RegionRoles(active_region="us-east-1", epoch=1, since=START)
    # A second first activation, planned from the same empty state, loses.
    assert not regions.fail_over(_plan(None, "us-east-2"))
    assert regions.roles() == first.roles


def test_a_failover_replaces_the_epoch_it_was_planned_from_and_a_racing_one_loses(pipeline):
    regions = pipeline.services.store.regions
    assert regions.fail_over(_plan(None, "us-east-1"))
    current = regions.roles()
    to_b, to_c = _plan(current, "us-east-2", minutes=5), _plan(current, "us-west-2", minutes=5)
    assert regions.fail_over(to_b)
    assert not regions.fail_over(to_c)
    # The handover: no region active, naming both.
    handover = RegionRoles(
        epoch=2, since=START + timedelta(minutes=5), handing_over_to="us-east-2", handing_over_from="us-east-1"
    )
    assert regions.roles() == handover
    assert regions.fail_over(_plan(handover, "us-east-2", minutes=6))
    assert regions.roles() == RegionRoles(active_region="us-east-2", epoch=3, since=START + timedelta(minutes=6))
    # A completion planned from the handover, replayed, loses: the epoch moved.
    assert not regions.fail_over(_plan(handover, "us-east-2", minutes=7))
    # Failing back, from what is there now.
    assert regions.fail_over(_plan(regions.roles(), "us-east-1", minutes=9))
    assert regions.fail_over(_plan(regions.roles(), "us-east-1", minutes=10))
    assert regions.roles() == RegionRoles(active_region="us-east-1", epoch=5, since=START + timedelta(minutes=10))


def test_the_local_regions_make_the_first_region_active_under_epoch_1_and_only_once(pipeline):
    regions = pipeline.services.store.regions
    assert activate_first_region(regions, list(REGIONS), START) == RegionRoles(
        active_region="us-east-1", epoch=1, since=START
    )
    assert regions.roles() == RegionRoles(active_region="us-east-1", epoch=1, since=START)
    with pytest.raises(RuntimeError, match="a region is active already"):
        activate_first_region(regions, ["us-east-2", "us-east-1"], START + timedelta(minutes=1))
    assert regions.roles() == RegionRoles(active_region="us-east-1", epoch=1, since=START)
