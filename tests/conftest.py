"""Shared fixtures. AWS is moto, in-process; resources come from template.yaml via tickwork_local.provision."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Before anything imports Powertools: no X-Ray daemon here, and EMF lines would drown the test output.
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "events"


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    """Each test starts with the process's metrics buffer empty: a metric an earlier test added on this worker and
    never flushed (code called outside a handler) is not printed by this test's first flush."""
    from tickwork.observability import metrics

    metrics.clear_metrics()


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def mocked_aws(aws_credentials: None) -> Iterator[None]:
    from moto import mock_aws
    from tickwork_local.moto_atomic import atomic_requests_in_process
    from tickwork_local.moto_cloudwatch import cloudwatch_in_process
    from tickwork_local.moto_message_moves import message_moves_in_process
    from tickwork_local.motoserver import serialize_item_responses_directly

    # DynamoDB's conditional writes are atomic; moto's are not unless it serves one request at a time.
    # CloudWatch's GetMetricData computes percentiles and metric math; moto's does not unless taught.
    # SQS moves a dead-letter queue's messages back (StartMessageMoveTask); moto does not unless taught.
    # DynamoDB's item answers are written as the local endpoint writes them, the same JSON without moto 5.2's
    # shape-walking serializer (tests/integration/test_speed_local_endpoint.py compares the two): quicker tests.
    serialize_item_responses_directly()
    with mock_aws(), atomic_requests_in_process(), cloudwatch_in_process(), message_moves_in_process():
        yield


@pytest.fixture
def pipeline(mocked_aws: None) -> Iterator[Any]:
    """The whole pipeline in-process: tables/queues/bucket from template.yaml, a fake clock, real handlers."""
    from tests.harness import Pipeline

    with Pipeline.create() as p:
        yield p


@pytest.fixture
def timed_pipeline(mocked_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """`pipeline` whose SQS runs on the fake clock too: a message's delay ends when the fake clock says so (moto's
    own are real seconds)."""
    import moto.sqs.models

    from tests.harness import Pipeline

    with Pipeline.create() as p:
        monkeypatch.setattr(moto.sqs.models, "unix_time", lambda *_: p.clock.now().timestamp())
        monkeypatch.setattr(moto.sqs.models, "unix_time_millis", lambda *_: p.clock.now().timestamp() * 1000)
        yield p
