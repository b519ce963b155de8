"""Shared fixtures. AWS is moto, in-process; resources come from template.yaml via tickwork_local.aws.provision."""

from __future__ import annotations

import functools
import io
import json
import logging
import os
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tickwork_local.aws.provision import telemetry_environment
from tickwork_local.stack.template import load_template

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "events"

# The suite runs as deployed: before anything imports Powertools, which reads these then, the functions' telemetry
# settings from template.yaml (INFO logs, metrics on, tracing on). What they print, log lines and EMF, pytest captures.
os.environ.update(telemetry_environment(load_template()))
# Tracing on, as in Lambda: with Lambda's markers the Tracer does not turn itself off, patches the AWS clients, and the
# X-Ray SDK records each handler and AWS call under this trace, for a daemon that is not here (`traces` keeps them).
os.environ["LAMBDA_TASK_ROOT"] = str(ROOT / "functions")
os.environ["_X_AMZN_TRACE_ID"] = "Root=1-5e1b4151-5ac6c58f5c9f3c2a1e1e1e1e;Parent=53995c3f42cd8ad8;Sampled=1"

from aws_xray_sdk.core import xray_recorder  # noqa: E402 - its recorder reads the markers when first imported
from aws_xray_sdk.core.emitters.udp_emitter import UDPEmitter  # noqa: E402


class CapturedSegments(UDPEmitter):
    """The X-Ray SDK's emitter with the daemon's socket replaced by a list: the segments are serialised as deployed,
    then kept (the latest few), not sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: deque[str] = deque(maxlen=1000)

    def _send_data(self, data: str) -> None:
        self.sent.append(data)

    def documents(self) -> list[dict[str, Any]]:
        """Each segment or subsegment sent, as the daemon would read it (a header line, then the document)."""
        return [json.loads(data.partition("\n")[2]) for data in self.sent]


xray_recorder.configure(emitter=CapturedSegments())


def _share_work_that_every_fresh_mock_repeats() -> None:
    """Each test builds its AWS afresh (a boto3 session, clients, moto's backends), so two costs that are the same in
    every test are paid once per process instead: botocore's service models and endpoint rules (a second a session,
    read from JSON), the RSA key moto generates for the AWS-managed KMS key behind each encrypted table (0.4 s), and
    botocore's check that each of a session's 1,300 built-in event handlers takes **kwargs (a signature read each:
    40 ms a session), which depends on the handler's code alone. What a test sees of AWS is unchanged: the same
    models and handlers, and a key no test reads."""
    import botocore.hooks
    import botocore.loaders
    import botocore.session
    import moto.kms.models

    loader = botocore.loaders.create_loader()
    read_signature = botocore.hooks.accepts_kwargs
    takes_kwargs: dict[Any, Any] = {}

    def accepts_kwargs(handler: Any) -> Any:
        code = getattr(getattr(handler, "__func__", handler), "__code__", None)
        if code is None:
            return read_signature(handler)
        if code not in takes_kwargs:
            takes_kwargs[code] = read_signature(handler)
        return takes_kwargs[code]

    def register_shared_loader(session: botocore.session.Session) -> None:
        session._components.lazy_register_component("data_loader", lambda: loader)

    botocore.session.Session._register_data_loader = register_shared_loader  # type: ignore[method-assign]
    botocore.hooks.accepts_kwargs = accepts_kwargs
    moto.kms.models.generate_private_key = functools.cache(moto.kms.models.generate_private_key)  # type: ignore[attr-defined]


_share_work_that_every_fresh_mock_repeats()


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among `text`'s lines (log lines, EMF), in order; other lines are skipped."""
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


@pytest.fixture
def info_logs() -> Iterator[io.StringIO]:
    """The service's log lines at INFO, through Powertools' own JSON formatter, as a stream to read."""
    from tickwork.observability import logger

    previous = logger.log_level
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    logger.setLevel("INFO")
    yield stream
    logger.removeHandler(handler)
    logger.setLevel(previous)


@pytest.fixture
def traces() -> CapturedSegments:
    """What the X-Ray SDK sent while this test ran (serialised segments and subsegments, as the daemon gets them)."""
    emitter = xray_recorder.emitter
    assert isinstance(emitter, CapturedSegments)
    emitter.sent.clear()
    return emitter


@pytest.fixture(autouse=True)
def fresh_metrics() -> None:
    """Each test starts with the process's metrics buffer empty: a metric an earlier test added on this worker and
    never flushed (code called outside a handler) is not printed by this test's first flush."""
    from tickwork.observability import metrics

    metrics.clear_metrics()


@pytest.fixture(autouse=True)
def no_secret_hidden_by_an_earlier_test() -> Iterator[None]:
    """A process keeps hiding a value a run left behind (its handler may outlive the run): on a test worker, that is
    an earlier test's value, which this test's log lines must not be masked for."""
    from tickwork.observability import secret_mask

    yield
    secret_mask.clear()


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
    from tickwork_local.aws.moto_atomic import atomic_requests_in_process
    from tickwork_local.aws.moto_cloudwatch import cloudwatch_in_process
    from tickwork_local.aws.moto_expressions import evaluate_expressions_quicker
    from tickwork_local.aws.moto_message_moves import message_moves_in_process
    from tickwork_local.aws.motoserver import serialize_item_responses_directly

    # DynamoDB's conditional writes are atomic; moto's are not unless it serves one request at a time.
    # CloudWatch's GetMetricData computes percentiles and metric math; moto's does not unless taught.
    # SQS moves a dead-letter queue's messages back (StartMessageMoveTask); moto does not unless taught.
    # DynamoDB's item answers are written as the local endpoint writes them, the same JSON without moto 5.2's
    # shape-walking serializer (tests/integration/test_speed_local_endpoint.py compares the two): quicker tests.
    serialize_item_responses_directly()
    # Its expressions evaluated as the local endpoint evaluates them (tests/integration/test_moto_expressions.py).
    evaluate_expressions_quicker()
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
    own are real seconds), and a message move task starts at the fake clock's time."""
    import moto.sqs.models
    from moto.sqs.responses import SQSResponse

    from tests.harness import Pipeline

    with Pipeline.create() as p:
        monkeypatch.setattr(moto.sqs.models, "unix_time", lambda *_: p.clock.now().timestamp())
        monkeypatch.setattr(moto.sqs.models, "unix_time_millis", lambda *_: p.clock.now().timestamp() * 1000)
        # The message move tasks' module (played in moto by mocked_aws), wherever the local runtime keeps it.
        moves = SQSResponse.start_message_move_task.__globals__
        monkeypatch.setitem(moves, "unix_time_millis", lambda *_: p.clock.now().timestamp() * 1000)
        yield p


# The in-process files that hold the suite's longest single tests (each 15 to 50 s on a 2-core machine), started
# first: pytest-xdist's worksteal hands each worker a contiguous share and lets an idle worker take from another's
# tail, so a long test left at the tail keeps one worker busy while the other has nothing left to take. A file
# keeps its own order (its module fixtures stay shared). tests/e2e/conftest.py orders the e2e files likewise.
IN_PROCESS_LONGEST_FIRST = (
    "tests/integration/test_pipeline.py",
    "tests/simulation/test_simulation.py",
    "tests/api/test_schemathesis.py",
    "tests/template/test_cfn_lint.py",
    "tests/cli/test_every_api_field_from_the_cli.py",
    "tests/integration/test_fanout_pipeline.py",
    "tests/cli/test_every_help.py",
    "tests/template/test_checkov.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.path.relative_to(ROOT).as_posix() if item.path.is_relative_to(ROOT) else ""
        return (
            IN_PROCESS_LONGEST_FIRST.index(path) if path in IN_PROCESS_LONGEST_FIRST else len(IN_PROCESS_LONGEST_FIRST)
        )

    items.sort(key=rank)  # stable: every other file keeps its place
