"""A run four times longer than its Lambda, on `tickwork dev` with a 10 s executor Lambda (the template parameter
ExecutorTimeoutSeconds, set locally), over HTTP as a user would: the worked example of docs/durable-runs.md
(examples/durable-runs/layer/export_jobs) yields, goes on in fresh invocations from its checkpoint, and finishes
on its first attempt with a straight run's result, each page exported once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import ROOT, Api, Node, instant_in, running_node, wait_for

pytestmark = pytest.mark.e2e

EXAMPLE_LAYER = ROOT / "examples" / "durable-runs" / "layer"
LAMBDA_SECONDS = 10  # 1 s kept for the outcome; should_yield() from 7 s
PAGES = 40  # of 1 s each: four times the Lambda's time


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    with running_node(
        "durable-runs",
        *("--tick-seconds", "2", "--job-types", "export_jobs", "--job-types-path", str(EXAMPLE_LAYER)),
        *("--parameter", f"ExecutorTimeoutSeconds={LAMBDA_SECONDS}"),
    ) as started:
        yield started


def _finished_run(api: Api, page_seconds: float, within: float) -> dict[str, Any]:
    payload = {"pages": PAGES, "page_seconds": page_seconds}
    job = api.create_job(name="export", type="batch_export", payload=payload, schedule={"at": instant_in(2)})
    summary = wait_for(
        lambda: next((r for r in api.runs(job["id"]) if r["status"] in {"SUCCEEDED", "FAILED"}), None),
        within,
        0.5,
        "the export's run to finish",
    )
    return api.get(f"/v1/runs/{summary['id']}")  # type: ignore[no-any-return]


def test_a_run_four_times_longer_than_its_lambda_yields_continues_and_finishes(node: Node) -> None:
    api = node.api
    straight = _finished_run(api, page_seconds=0, within=30)  # no time to speak of: one segment
    assert (straight["status"], straight["segments"]) == ("SUCCEEDED", 0), straight

    run = _finished_run(api, page_seconds=1, within=150)

    assert (run["status"], run["attempts"], run.get("error")) == ("SUCCEEDED", 1, None), run
    # 40 s of pages, at most 9 s of them a segment (7 s and the page under way), at least one page each
    assert 4 <= run["segments"] < PAGES, run
    history = run["attempt_history"]
    assert [record["outcome"] for record in history] == ["yielded"] * run["segments"] + ["succeeded"]
    assert {record["attempt"] for record in history} == {1}
    assert api.get(f"/v1/runs/{run['id']}/result") == api.get(f"/v1/runs/{straight['id']}/result")
    assert (run["progress"]["fraction"], run["progress"]["message"]) == (1.0, f"page {PAGES} of {PAGES}")
    lines = api.get(f"/v1/runs/{run['id']}/logs")["lines"]  # every segment's, in order
    pages = [line["fields"]["page"] for line in lines if line["message"] == "page exported"]
    assert pages == list(range(PAGES))  # every page exported once, over all the segments
