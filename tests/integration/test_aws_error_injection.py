"""The AWS error injector of the local runtime, the soak and the fault suite fails requests the way AWS does.

Each kind surfaces to the caller as its real error (code and status, or a connection timeout), ahead of
moto's own answer; the SDK's standard retries ride over a share of them; the stream is reproducible by seed.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws
from tickwork_local.aws.faults import KINDS, NO_ANSWER, AwsErrorInjector, ErrorKind

ONE_ATTEMPT = Config(retries={"total_max_attempts": 1, "mode": "standard"})


@pytest.fixture(autouse=True)
def aws(monkeypatch):
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "t",
        "AWS_SECRET_ACCESS_KEY": "t",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield


def _client(injector: AwsErrorInjector, service: str, config: Config = ONE_ATTEMPT):
    session = boto3.session.Session()
    injector.register(session.events)
    return session.client(service, config=config)


def _any_call(client, service: str):
    operation = {"dynamodb": "list_tables", "sqs": "list_queues", "s3": "list_buckets"}[service]
    return getattr(client, operation)()


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_each_kind_reaches_the_caller_as_aws_would_send_it(kind: ErrorKind):
    injector = AwsErrorInjector(1.0, kinds=[kind])
    client = _client(injector, kind.service)
    if kind.code in NO_ANSWER:
        with pytest.raises(NO_ANSWER[kind.code]):
            _any_call(client, kind.service)
    else:
        with pytest.raises(ClientError) as raised:
            _any_call(client, kind.service)
        assert raised.value.response["Error"]["Code"] == kind.code
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == kind.status
    assert injector.injected == {kind.name: 1}


def test_the_sdk_retries_ride_over_a_share_of_failures_and_the_stream_is_seeded():
    def run(seed: int) -> dict[str, int]:
        injector = AwsErrorInjector(0.3, seed=seed)
        client = _client(injector, "dynamodb", Config(retries={"max_attempts": 10, "mode": "standard"}))
        for _ in range(40):
            assert client.list_tables()["TableNames"] == []  # every call succeeds in the end
        assert injector.requests["dynamodb"] == 40 + sum(injector.injected.values())
        return dict(injector.injected)

    first = run(3)
    assert 5 <= sum(first.values()) <= 40
    assert {name.split(":")[0] for name in first} == {"dynamodb"}
    assert run(3) == first  # the same seed, the same faults


def test_rate_zero_injects_nothing_and_services_without_kinds_pass():
    quiet = AwsErrorInjector(0.0)
    _any_call(_client(quiet, "sqs"), "sqs")
    assert quiet.injected == {}
    s3_only = AwsErrorInjector(1.0, kinds=[ErrorKind("s3", "SlowDown", 503)])
    assert _any_call(_client(s3_only, "dynamodb"), "dynamodb")["TableNames"] == []


def test_rate_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="rate"):
        AwsErrorInjector(1.5)
