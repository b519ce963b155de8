"""Three `tickwork dev --attach` nodes on one moto server are three Lambdas on one account: killing one with
SIGKILL mid-load loses nothing and doubles nothing. Its claimed and in-flight runs come back through the run
leases and the messages' visibility, which follows the lease from before it is taken (LeaseSeconds + 15 s), and
the tick's re-send of claimed runs no executor leased.

Production settings throughout: the template's defaults (LeaseSeconds 60, the queues' 5,400 s visibility, a
60 s tick aligned to the minute); no local override shortens any of them. The recovery bound the README states
is what this test waits for."""

from __future__ import annotations

import re
import sys
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.e2e.conftest import Node, Proc, free_port, start_node, wait_for

pytestmark = pytest.mark.e2e

JOBS = 60
RUN_LINE = re.compile(r" run (\w+)\s+.*\((j[0-9a-z]{25}\.\d{13})\)")


def at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def outcomes(node: Node) -> list[tuple[str, str]]:
    """(status, run id) of every run line the node printed."""
    return [(m.group(1), m.group(2)) for line in node.proc.lines if (m := RUN_LINE.search(line))]


def test_three_nodes_one_killed_mid_load_lose_nothing_and_double_nothing() -> None:
    moto_port = free_port()
    moto = Proc.start("moto", [sys.executable, "-m", "tickwork_local.motoserver", "--port", str(moto_port)])
    nodes: list[Node] = []
    try:
        moto.wait_line("moto listening", 20)
        args = ("--attach", f"http://127.0.0.1:{moto_port}")
        nodes.append(start_node("n0", *args))  # creates the resources
        with ThreadPoolExecutor(2) as pool:
            nodes += list(pool.map(lambda name: start_node(name, *args), ["n1", "n2"]))
        front, victim, other = nodes
        api = front.api

        tag = uuid.uuid4().hex[:8]

        def create(i: int) -> tuple[str, dict[str, Any]]:
            # Every fourth run takes 2 s, so the victim is likely in the middle of one when it dies.
            payload = {"i": i, "tag": tag, **({"sleep_seconds": 2} if i % 4 == 0 else {})}
            job = api.create_job(
                name=f"load-{i}", payload=payload, priority=i % 10, schedule={"at": at(3 + 7 * i / JOBS)}
            )
            return job["id"], payload

        with ThreadPoolExecutor(6) as pool:
            jobs = list(pool.map(create, range(JOBS)))

        # Mid-load: once every node has run something and a third of the runs are done, the victim dies
        # without a chance to clean up.
        wait_for(
            lambda: all(outcomes(n) for n in nodes) and sum(len(outcomes(n)) for n in nodes) >= JOBS // 3,
            30,
            0.2,
            "every node to run something",
        )
        victim.proc.kill()
        done_by_victim = outcomes(victim)

        def settled() -> dict[str, list[dict[str, Any]]] | None:
            runs = {job_id: other.api.runs(job_id) for job_id, _ in jobs}
            finished = all(
                rs and all(r["status"] in ("SUCCEEDED", "FAILED", "SKIPPED") for r in rs) for rs in runs.values()
            )
            return runs if finished else None

        # A run the victim had leased is back within LeaseSeconds + 15 s = 75 s; one it had received but not
        # leased is re-sent by a tick (every 60 s) once it is 30 s overdue: 150 s covers both, with room.
        killed_at = time.monotonic()
        runs = wait_for(settled, 150, 1.0, "every job's run to finish after the kill")
        recovery_s = time.monotonic() - killed_at
        for job_id, payload in jobs:
            (run,) = runs[job_id]  # one run per job: nothing doubled, nothing lost
            assert run["status"] == "SUCCEEDED", run
            assert front.api.get(f"/v1/runs/{run['id']}/result") == payload

        # Each run's success was recorded once, by one node (lines are printed after the record is written).
        successes = Counter(run_id for n in nodes for status, run_id in outcomes(n) if status == "SUCCEEDED")
        assert set(successes) <= {r[0]["id"] for r in runs.values()}
        assert max(successes.values()) == 1, successes.most_common(3)
        taken_over = sum(1 for r in runs.values() if r[0]["attempts"] > 1)
        print(
            f"victim ran {len(done_by_victim)} runs before SIGKILL; survivors ran {len(outcomes(front))} and "
            f"{len(outcomes(other))}; {taken_over} runs were taken over from it; all {JOBS} succeeded once; "
            f"settled {recovery_s:.0f} s after the kill"
        )

        for survivor in (front, other):
            assert survivor.proc.terminate() == 0, survivor.proc.output()
    finally:
        for n in nodes:
            n.proc.kill()
        moto.kill()
