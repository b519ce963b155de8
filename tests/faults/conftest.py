"""The fault suite's pipeline: SQS on the fake clock, an AWS error injector ahead of moto, the SDK's backoff
recorded rather than slept."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.endpoint
import moto.sqs.models
import pytest
from moto.core.botocore_stubber import BotocoreStubber
from tickwork_local.aws.faults import AwsErrorInjector

from tests.faults import jobtypes
from tests.faults.aws_errors import AwsErrorKind, injector_for, skipping_refused
from tests.harness import Pipeline


class _RecordedSleeps:
    """botocore's endpoint sleeps between retries; here the backoff is recorded, not waited (time is the
    fake clock's, and real seconds would only slow the suite). Everything else of `time` is the real one."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.backoffs: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.backoffs.append(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@pytest.fixture
def sdk_backoffs(monkeypatch: pytest.MonkeyPatch) -> _RecordedSleeps:
    recorded = _RecordedSleeps(botocore.endpoint.time)
    monkeypatch.setattr(botocore.endpoint, "time", recorded)
    return recorded


@pytest.fixture
def injector(request: pytest.FixtureRequest) -> AwsErrorInjector | None:
    kind: AwsErrorKind | None = getattr(request, "param", None)
    return None if kind is None else injector_for(kind, rate=0.2, seed=11)


@pytest.fixture
def pipeline_env() -> dict[str, str]:
    """Environment overrides of the faulty pipeline (a module may override this fixture: the fan-out's)."""
    return {}


@pytest.fixture
def faulty_pipeline(
    mocked_aws: None,
    monkeypatch: pytest.MonkeyPatch,
    sdk_backoffs: _RecordedSleeps,
    injector: AwsErrorInjector | None,
    pipeline_env: dict[str, str],
) -> Iterator[Pipeline]:
    jobtypes.COMPLETIONS.clear()
    hooks = [lambda session: injector.register(session.events)] if injector is not None else []
    monkeypatch.setattr(BotocoreStubber, "process_request", skipping_refused(BotocoreStubber.process_request))
    with Pipeline.create(session_hooks=hooks, **pipeline_env) as pipeline:
        # SQS's clock is the fake one: delays and visibility timeouts end when the fake clock says so.
        monkeypatch.setattr(moto.sqs.models, "unix_time", lambda *_: pipeline.clock.now().timestamp())
        monkeypatch.setattr(moto.sqs.models, "unix_time_millis", lambda *_: pipeline.clock.now().timestamp() * 1000)
        yield pipeline
