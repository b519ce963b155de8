"""`tickwork regions status|failover` against the real API handler, in RegionMode eventual (docs/regions.md): a
failover hands over, then waits while replication has not caught up (the probe says when it has), gives up after
--wait, stops when it cannot be told, and a forced one prints the runs that may run twice."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from tickwork.model.regions import RegionRoles, Replication

from tests.harness import START, Pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


class CatchingUp:
    """Replication that catches up after `behind` more asks."""

    def __init__(self, behind: int) -> None:
        self.behind = behind
        self.asked = 0

    def caught_up(self, handover: RegionRoles) -> Replication:
        assert handover.handing_over
        self.asked += 1
        return Replication(self.asked > self.behind, "waiting 5 s more")


class CannotTell:
    def caught_up(self, handover: RegionRoles) -> Replication:
        return Replication(None, "the old active region us-east-1 did not answer (DynamoDB: EndpointConnectionError)")


@pytest.fixture
def pipeline(mocked_aws: None) -> Iterator[Pipeline]:
    with Pipeline.create(REGION_MODE="eventual", GLOBAL_TABLE_REGIONS="us-east-1,us-east-2") as p:
        yield p


def _probe(cli: Any, behind: int) -> CatchingUp:
    probe = CatchingUp(behind)
    cli.pipeline.services.region_failovers.probe = probe
    return probe


def test_a_failover_waits_until_replication_has_caught_up(cli):
    assert cli.json("regions", "failover", "--to", "us-east-1")["epoch"] == 1
    probe = _probe(cli, behind=2)
    started = cli.pipeline.clock.now()
    result = cli("regions", "failover", "--to", "us-east-2", output="table")
    assert result.exit_code == 0, result.output + result.stderr
    assert "active: us-east-2 (epoch 3), was us-east-1" in result.stdout
    assert probe.asked == 3  # not on the first ask, which wrote the handover
    assert cli.pipeline.clock.now() - started == timedelta(seconds=15)  # three polls of 5 s
    assert result.stderr.count("replication has not caught up") == 3
    assert "handing over from us-east-1 to us-east-2 (epoch 2, no region active)" in result.stderr
    assert cli.json("regions", "status")["active_region"] == "us-east-2"


def test_a_failover_that_cannot_tell_stops_and_says_why(cli):
    cli.json("regions", "failover", "--to", "us-east-1")
    cli.pipeline.services.region_failovers.probe = CannotTell()
    started = cli.pipeline.clock.now()
    result = cli("regions", "failover", "--to", "us-east-2", output="table")
    assert result.exit_code != 0
    assert "cannot be told" in result.stderr
    assert "us-east-1 did not answer (DynamoDB: EndpointConnectionError)" in result.stderr
    assert cli.pipeline.clock.now() - started == timedelta(seconds=5)  # the handover's answer, then this one
    status = cli.json("regions", "status")
    assert (status["active_region"], status["handing_over_to"]) == (None, "us-east-2")
    forced = cli("regions", "failover", "--to", "us-east-2", "--force", output="table")
    assert forced.exit_code == 0, forced.output + forced.stderr
    assert forced.stdout.splitlines() == ["active: us-east-2 (epoch 3), was us-east-1"]


def test_a_failover_gives_up_after_its_wait(cli):
    cli.json("regions", "failover", "--to", "us-east-1")
    _probe(cli, behind=100)
    started = cli.pipeline.clock.now()
    result = cli("regions", "failover", "--to", "us-east-2", "--wait", "10", output="table")
    assert result.exit_code != 0
    assert "replication has not caught up" in result.stderr
    assert cli.pipeline.clock.now() - started == timedelta(seconds=10)
    status = cli.json("regions", "status")  # handing over: no region active until it completes, or is forced
    assert (status["active_region"], status["handing_over_from"], status["epoch"]) == (None, "us-east-1", 2)


def test_a_forced_failover_does_not_wait_and_prints_the_runs_that_may_run_twice(cli):
    cli.json("regions", "failover", "--to", "us-east-1")
    probe = _probe(cli, behind=100)
    job = cli.pipeline.create_job(schedule={"at": START + timedelta(seconds=30)})  # claimed when created
    (run,) = cli.pipeline.runs_of(job.id)
    result = cli("regions", "failover", "--to", "us-east-2", "--force", output="table")
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stdout.splitlines() == ["active: us-east-2 (epoch 2), was us-east-1", run.id]
    assert "forced: 1 run(s) may run twice" in result.stderr
    assert probe.asked == 0  # from an active region there is no handover to ask about
