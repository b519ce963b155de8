"""Issue #9's defects, one regression test (or a few) per defect, named after it.

Bad input gets a clear problem naming the field, and changes nothing: no job, no run, no idempotency record.
"""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from tickwork.clock import iso

from tests.api.conftest import build_event
from tests.api.test_bad_input import WRITES
from tests.harness import START

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

SOON = iso(START + timedelta(hours=1))


def _job(**changes: Any) -> dict[str, Any]:
    return {"name": "report", "type": "echo", "payload": {"n": 1}, "schedule": {"rate": "1 hour"}, **changes}


def _assert_nothing_written(pipeline) -> None:
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


def _assert_problem(reply, status: int, field: str) -> None:
    assert reply.status == status, reply.text
    assert reply.headers["content-type"] == "application/problem+json"
    assert field in reply.fields, reply.json


def _table_items(pipeline) -> list[dict[str, Any]]:
    db = pipeline.services.clients.client("dynamodb")
    return db.scan(TableName=pipeline.services.settings.table_name)["Items"]


def _idempotency_records(pipeline) -> list[dict[str, Any]]:
    return [i for i in _table_items(pipeline) if i["pk"]["S"].startswith("IDEM#")]


# ---------------------------------------------------------------- 18: a body that is not UTF-8


def _undecodable(method: str, path: str, *, base64_encoded: bool) -> dict[str, Any]:
    if base64_encoded:
        event = build_event(method, path, raw_body=base64.b64encode(b'{"name": "caf\xe9 \xff"}').decode())
        event["isBase64Encoded"] = True
    else:  # a text body that cannot be UTF-8 (an unpaired surrogate, as a JSON \udcff escape decodes to)
        event = build_event(method, path, raw_body='{"name": "\udcff"}')
    return event


@pytest.mark.parametrize("base64_encoded", [True, False], ids=["base64", "raw"])
def test_a_body_that_is_not_utf8_is_400_naming_body(api, pipeline, base64_encoded):
    job = api.create()
    pipeline.calls.clear()
    for method, path in (("POST", "/v1/jobs"), ("PATCH", f"/v1/jobs/{job['id']}"), ("POST", "/v1/dlq/redrive")):
        reply = api.call(_undecodable(method, path, base64_encoded=base64_encoded))
        _assert_problem(reply, 400, "body")
        assert "UTF-8" in reply.text
    _assert_nothing_written(pipeline)


def test_a_body_that_is_not_base64_though_flagged_so_is_400_naming_body(api, pipeline):
    event = build_event("POST", "/v1/jobs", raw_body="not base64 at all!")
    event["isBase64Encoded"] = True
    _assert_problem(api.call(event), 400, "body")
    _assert_nothing_written(pipeline)
