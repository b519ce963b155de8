"""One `tickwork dev` node, driven over HTTP: on-time one-shots, rate jobs, retries and the DLQ, pause and
resume, and the docs."""

from __future__ import annotations

import itertools
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.e2e.conftest import Api, Node, cli, wait_for

pytestmark = pytest.mark.e2e

TERMINAL = {"SUCCEEDED", "FAILED", "SKIPPED"}
FAST_RETRY = {"max_attempts": 3, "backoff_seconds": 1, "max_backoff_seconds": 2}


def at(seconds: float, since: datetime | None = None) -> str:
    instant = (since or datetime.now(UTC)) + timedelta(seconds=seconds)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse(instant: str) -> datetime:
    return datetime.fromisoformat(instant.replace("Z", "+00:00"))


def succeeded(api: Api, job_id: str) -> list[dict[str, Any]]:
    return sorted((r for r in api.runs(job_id) if r["status"] == "SUCCEEDED"), key=lambda r: r["scheduled_for"])


def test_fifty_one_shot_echo_jobs_each_run_once_on_time_with_their_payload_as_result(node: Node) -> None:
    api = node.api
    tag = uuid.uuid4().hex[:8]
    # One instant for all 50, far enough ahead that the last create (8 at a time, on a loaded CI machine) is still
    # before it: a one-shot in the past is refused (422), and rightly.
    first = datetime.now(UTC) + timedelta(seconds=10)

    def create(i: int) -> tuple[str, dict[str, Any]]:
        payload = {"i": i, "tag": tag, "nested": {"even": i % 2 == 0}}
        schedule = {"at": at(3 * i / 49, since=first)}
        job = api.create_job(name=f"burst-{i}", payload=payload, priority=i % 10, schedule=schedule)
        return job["id"], payload

    with ThreadPoolExecutor(8) as pool:
        jobs = list(pool.map(create, range(50)))

    finished: dict[str, list[dict[str, Any]]] = {}

    def all_finished() -> bool:
        for job_id, _ in jobs:
            if job_id not in finished:
                runs = api.runs(job_id)
                if runs and all(r["status"] in TERMINAL for r in runs):
                    finished[job_id] = runs
        return len(finished) == len(jobs)

    # Nothing is due before `first`; polling earlier would only load the runtime being measured.
    time.sleep(max(0.0, (first - datetime.now(UTC)).total_seconds()))
    wait_for(all_finished, 40, 0.5, "all 50 runs to finish")

    lateness = []
    for job_id, payload in jobs:
        (run,) = finished[job_id]  # exactly one run each
        assert run["status"] == "SUCCEEDED", run
        assert run["attempts"] == 1, run
        assert api.get(f"/v1/runs/{run['id']}/result") == payload
        lateness.append(run["lateness_ms"])
    figures = statistics.quantiles(lateness, n=100, method="inclusive")
    report = (
        f"start lateness over 50 runs (ms): min {min(lateness)}, p50 {statistics.median(lateness):.0f}, "
        f"p90 {figures[89]:.0f}, p99 {figures[98]:.0f}, max {max(lateness)}"
    )
    print(report)
    assert min(lateness) >= 0, report  # never early
    # On time, not at the next tick (60 s deployed): a sanity bound, not a performance goal. Beside another e2e file
    # on a 2-core CI machine, the last of the 50 started 5.0 and 6.2 s late (two clean clones); 10 s leaves room for
    # that load and still tells a run sent with its delay from one left for a later minute. How late runs start on
    # this machine is measured and printed by `make bench` (docs/benchmarks.md), never asserted by a timed test.
    assert max(lateness) <= 10_000, report


def test_a_rate_job_yields_consecutive_runs(node: Node) -> None:
    api = node.api
    job = api.create_job(name="every-2s", payload={"tick": "tock"}, schedule={"rate": "2 seconds"})
    try:
        runs = wait_for(lambda: (found := succeeded(api, job["id"])) and len(found) >= 3 and found, 20, 0.5, "3 runs")
        times = [parse(r["scheduled_for"]) for r in runs[:3]]
        assert [(b - a).total_seconds() for a, b in itertools.pairwise(times)] == [2.0, 2.0]
        for run in runs[:3]:
            assert run["attempts"] == 1
            assert api.get(f"/v1/runs/{run['id']}/result") == {"tick": "tock"}
        # no occurrence between them was skipped or doubled
        between = [r for r in api.runs(job["id"]) if times[0] <= parse(r["scheduled_for"]) <= times[2]]
        assert sorted(r["id"] for r in between) == sorted(r["id"] for r in runs[:3])
    finally:
        api.cancel(job["id"])


def test_two_failures_recover_and_nine_land_in_the_dlq_until_redriven(node: Node) -> None:
    api = node.api
    recovers = api.create_job(
        name="fails-twice", payload={"fail_attempts": 2}, retry=FAST_RETRY, schedule={"at": at(1)}
    )
    dead = api.create_job(name="fails-nine", payload={"fail_attempts": 9}, retry=FAST_RETRY, schedule={"at": at(1)})

    def final(job_id: str) -> dict[str, Any] | None:
        runs = api.runs(job_id)
        return runs[0] if len(runs) == 1 and runs[0]["status"] in TERMINAL else None

    ok = wait_for(lambda: final(recovers["id"]), 30, 0.5, "the twice-failing run to finish")
    assert ok["status"] == "SUCCEEDED", ok
    assert ok["attempts"] == 3, ok
    assert api.get(f"/v1/runs/{ok['id']}/result") == {"fail_attempts": 2}

    failed = wait_for(lambda: final(dead["id"]), 30, 0.5, "the nine-times-failing run to fail")
    assert failed["status"] == "FAILED", failed
    assert failed["attempts"] == 3, failed
    assert failed["error"]["type"] == "EchoFailure"

    def in_dlq(run_id: str) -> bool:
        return any(r["id"] == run_id for r in api.get("/v1/dlq?limit=100")["items"])

    assert in_dlq(failed["id"])
    redriven = api.post("/v1/dlq/redrive", {"run_ids": [failed["id"]]}, expect=202)
    assert redriven["redriven"] == 1
    assert api.get(f"/v1/runs/{failed['id']}")["status"] != "FAILED"
    assert not in_dlq(failed["id"])
    # It runs again from attempt 1, fails its three attempts again, and is back on the DLQ.
    again = wait_for(
        lambda: (r := api.get(f"/v1/runs/{failed['id']}"))["status"] == "FAILED" and r, 30, 0.5, "the redriven run"
    )
    assert again["attempts"] == 3
    assert in_dlq(failed["id"])


def test_a_paused_job_does_not_run_and_runs_again_once_resumed(node: Node) -> None:
    api = node.api
    job = api.create_job(name="pausable", payload={"p": 1}, schedule={"rate": "2 seconds"})
    try:
        wait_for(lambda: succeeded(api, job["id"]), 15, 0.5, "a first run")
        assert api.post(f"/v1/jobs/{job['id']}/pause")["state"] == "PAUSED"
        paused_at = datetime.now(UTC)

        def skipped_while_paused() -> list[dict[str, Any]]:
            return [
                r
                for r in api.runs(job["id"])
                if r["status"] == "SKIPPED"
                and r.get("skip_reason") == "paused"
                and parse(r["scheduled_for"]) > paused_at
            ]

        wait_for(lambda: len(skipped_while_paused()) >= 2, 20, 0.5, "two occurrences skipped while paused")
        ran = [r for r in succeeded(api, job["id"]) if parse(r["started_at"]) > paused_at]
        assert ran == [], "no run may start while the job is paused"

        assert api.post(f"/v1/jobs/{job['id']}/resume")["state"] == "ACTIVE"
        resumed_at = datetime.now(UTC)
        wait_for(
            lambda: [r for r in succeeded(api, job["id"]) if parse(r["scheduled_for"]) > resumed_at],
            15,
            0.5,
            "a run after resume",
        )
    finally:
        api.cancel(job["id"])


def test_docs_page_and_openapi_document_are_served(node: Node) -> None:
    import urllib.request

    with urllib.request.urlopen(f"{node.api.url}/docs", timeout=10) as page:
        html = page.read().decode()
        assert page.status == 200
    assert "swagger-ui" in html
    assert "/v1/openapi.json" in html
    with urllib.request.urlopen(f"{node.api.url}/docs/swagger-ui-bundle.min.js", timeout=10) as script:
        assert script.status == 200
        assert len(script.read()) > 100_000
    paths = node.api.get("/v1/openapi.json")["paths"]
    assert "/v1/jobs" in paths
    assert "/v1/dlq/redrive" in paths


def test_the_quick_start_commands_work_against_the_runtime(node: Node) -> None:
    """docs/local.md's second terminal, with the job due in 3 s instead of 10."""

    def tickwork(*args: str) -> Any:
        return cli(node, *args, timeout=60)

    job = tickwork(
        "jobs", "create", "--name", "hello", "--type", "echo", "--at", "+3s", "--payload", '{"hello": "world"}'
    )
    page = tickwork("runs", "list", job["id"], "--wait")
    (run,) = page["items"]
    assert run["status"] == "SUCCEEDED"
    assert tickwork("runs", "result", run["id"]) == {"hello": "world"}
