"""RegionMode strong (docs/regions.md section 2: audited changes as an intent, the change marked, then a confirm)
against the features that were built on transactions: what a change in flight (its item marked, its record not yet
confirmed) does to another request on the same item."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.api.conftest import ApiClient
from tests.harness import Pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.fixture
def pipeline(mocked_aws: None) -> Iterator[Any]:
    with Pipeline.create(REGION_MODE="strong") as p:
        yield p


@contextmanager
def during_the_next_confirm(pipeline: Any, call: Callable[[], Any]) -> Iterator[list[Any]]:
    """`call` made once, as the next audited write is about to confirm its record (its change made and marked): a
    request racing it on the same item. Yields what `call` returned, once it has."""
    client = pipeline.services.store.shared_table.client
    made: list[Any] = []
    started: list[bool] = []

    def before_confirm(params: dict[str, Any], **_: Any) -> None:
        if params.get("UpdateExpression", "").startswith("REMOVE pending") and not started:
            started.append(True)
            made.append(call())

    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", before_confirm)
    try:
        yield made
    finally:
        client.meta.events.unregister("before-parameter-build.dynamodb.UpdateItem", before_confirm)


def test_a_trigger_racing_another_triggers_join_joins_the_same_window(api: ApiClient, pipeline: Any) -> None:
    job = api.create(schedule={"cron": "0 0 1 1 *"})
    debounce = {"key": "k", "seconds": 60, "collect": True}
    path = f"/v1/jobs/{job['id']}/trigger"
    first = api.post(path, {"debounce": debounce, "payload": {"n": 1}})
    assert first.status == 202, first.text
    racing = lambda: api.post(path, {"debounce": debounce, "payload": {"n": 3}})  # noqa: E731
    with during_the_next_confirm(pipeline, racing) as inner:
        second = api.post(path, {"debounce": debounce, "payload": {"n": 2}})
    assert second.status == 202, second.text
    assert inner[0].status == 409, inner[0].text  # the run held by a join not yet confirmed: try again
    runs = pipeline.runs_of(job["id"])
    assert [r.id for r in runs] == [first.json["id"]]  # one run for the window
    carried = runs[0].payload["payloads"]
    assert {"n": 2} in carried
    assert {"n": 3} not in carried
