"""Round 4 (issue 34), bad input: a deadline refused only when it truly cannot be missed; bad input answered with
a 4xx naming the field (never a 500), with nothing written; the OpenAPI document says what the server checks; and
one validator per concept: create and PATCH refuse the same field values alike."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_bad_input import VALID, WRITES

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _nothing_written(pipeline: Any) -> None:
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


# ---------------------------------------------------------------- 12: the deadline's cap


@pytest.mark.parametrize(
    "spec",
    [
        # The issue's: its occurrence may start 1,800 s late (jitter), so a 600 s deadline is missed often.
        {"jitter_seconds": 1800, "timeout_seconds": 60, "retry": {"max_attempts": 1}, "misfire_grace_seconds": 0},
        # The same with no handler time beyond the one segment: the jitter alone makes it missable.
        {
            "jitter_seconds": 1800,
            "timeout_seconds": 60,
            "max_run_seconds": 60,
            "retry": {"max_attempts": 1},
            "misfire_grace_seconds": 0,
        },
        # No jitter: a handler that yields goes on for up to max_run_seconds, one segment of 60 s at a time.
        {"timeout_seconds": 60, "max_run_seconds": 3600, "retry": {"max_attempts": 1}, "misfire_grace_seconds": 0},
    ],
    ids=["jitter", "jitter alone", "durable segments"],
)
def test_deadline_that_jitter_can_miss_is_accepted(api, spec):
    reply = api.post("/v1/jobs", {**VALID, "schedule": {"rate": "1 hour"}, **spec, "deadline": {"within_seconds": 600}})
    assert reply.status == 201, reply.text
    assert reply.json["deadline"]["within_seconds"] == 600


def test_deadline_past_the_longest_a_run_can_take_is_still_refused(api, pipeline):
    # 300 s of jitter, then one attempt of at most 60 s of handler time (max_run_seconds bounds its segments).
    spec = {
        "jitter_seconds": 300,
        "timeout_seconds": 60,
        "max_run_seconds": 60,
        "retry": {"max_attempts": 1},
        "misfire_grace_seconds": 0,
    }
    body = {**VALID, "schedule": {"rate": "1 hour"}, **spec}
    assert api.post("/v1/jobs", {**body, "name": "at the longest", "deadline": {"within_seconds": 360}}).status == 201
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {**body, "deadline": {"within_seconds": 361}})
    assert reply.status == 422, reply.text
    assert reply.fields == ["deadline"]
    assert "360 s" in reply.json["errors"][0]["message"]
    _nothing_written(pipeline)
