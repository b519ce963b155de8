"""The dispatcher fan-out on `tickwork dev` (issue 16, item 1): with `--parameter DispatchWorkers=2` the local
runtime's tick hands its shards to two dispatch workers through the dispatch queue, as the template wires it in
AWS; the coordinator claims nothing itself, so runs claimed by a tick were claimed by the workers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.conftest import Node, start_node, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def fanned_out_node() -> Iterator[Node]:
    started = start_node(
        "fanout",
        "--tick-seconds",
        "2",
        "--due-shards",
        "4",
        "--parameter",
        "DispatchWorkers=2",
    )
    try:
        yield started
    finally:
        code = started.proc.terminate()
        assert code == 0, started.proc.output()


def test_jobs_entering_the_horizon_are_claimed_by_the_dispatch_workers(fanned_out_node: Node) -> None:
    api = fanned_out_node.api
    # Beyond the 120 s horizon when created (no claim at create), inside it a few ticks later.
    at = datetime.now(UTC) + timedelta(seconds=126)
    jobs = [
        api.create_job(name=f"fanout-{i}", schedule={"at": at.isoformat().replace("+00:00", "Z")}) for i in range(8)
    ]
    assert all(api.runs(j["id"]) == [] for j in jobs)

    def all_claimed() -> list[list[dict]] | None:
        runs = [api.runs(j["id"]) for j in jobs]
        return runs if all(len(r) == 1 for r in runs) else None

    claimed = wait_for(all_claimed, 30, 0.5, "the dispatch workers to claim every job")
    assert {r[0]["status"] for r in claimed} == {"QUEUED"}
    assert datetime.now(UTC) < at  # claimed ahead of their time
    for j in jobs:
        api.cancel(j["id"])
