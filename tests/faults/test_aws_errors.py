"""AWS errors past which the promises still hold: throttles, 5xx, SlowDown and connection errors, injected
ahead of moto at a seeded rate into every client the pipeline builds (issue 11, item 1)."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError
from moto.core.botocore_stubber import BotocoreStubber
from tickwork.aws.clients import CLIENT_CONFIG, TOTAL_ATTEMPTS, AwsClients

from tests.faults.aws_errors import AwsErrorKind, injector_for, skipping_refused
from tests.faults.world import ACTIVE, RECOVERY_BOUND, World


@pytest.mark.parametrize("injector", list(AwsErrorKind), ids=lambda k: k.name.lower(), indirect=True)
def test_aws_errors_lose_nothing_and_run_nothing_twice(faulty_pipeline, injector, sdk_backoffs):
    world = World(faulty_pipeline)
    world.create_mix()
    injector.active = True
    world.run_for(ACTIVE)
    injector.active = False
    assert injector.total > 0, f"nothing was injected: {injector.requests}"
    assert sdk_backoffs.backoffs, "the SDK retried nothing: are the clients configured for retries?"
    world.recover(RECOVERY_BOUND)
    world.assert_promises_kept()


@pytest.mark.parametrize(
    ("kind", "error"),
    [(AwsErrorKind.DYNAMODB_THROTTLING, ClientError), (AwsErrorKind.CONNECT_TIMEOUT, ConnectTimeoutError)],
)
def test_an_injected_error_is_refused_ahead_of_moto_and_retried_by_the_sdk(
    mocked_aws, monkeypatch, sdk_backoffs, kind, error
):
    """Our hook runs before moto's: a refused write is never carried out, and every attempt is refused."""
    monkeypatch.setattr(BotocoreStubber, "process_request", skipping_refused(BotocoreStubber.process_request))
    injector = injector_for(kind, rate=1.0, seed=1)
    session = boto3.session.Session()
    injector.register(session.events)
    db = AwsClients(session).client("dynamodb")
    db.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    injector.active = True
    with pytest.raises(error):
        db.put_item(TableName="t", Item={"pk": {"S": "x"}})
    injector.active = False
    assert injector.by_operation["PutItem"] == TOTAL_ATTEMPTS
    assert len(sdk_backoffs.backoffs) == TOTAL_ATTEMPTS - 1
    assert "Item" not in db.get_item(TableName="t", Key={"pk": {"S": "x"}})


def test_every_client_gets_the_retry_configuration_and_invokes_stay_single_attempt(mocked_aws):
    clients = AwsClients(boto3.session.Session())
    for service in ("dynamodb", "sqs", "s3", "lambda"):
        assert clients.client(service).meta.config.retries == CLIENT_CONFIG.retries
    assert CLIENT_CONFIG.retries == {"mode": "standard", "total_max_attempts": TOTAL_ATTEMPTS}
    once = clients.single_attempt_client("lambda", read_timeout=3.2)
    assert once.meta.config.retries == {"mode": "standard", "total_max_attempts": 1}
    assert once.meta.config.read_timeout == 4


def test_no_code_builds_a_boto3_client_but_through_aws_clients():
    """So that `CLIENT_CONFIG` reaches every client: the Lambdas', the local runtime's and the job types'."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    building = re.compile(r"boto3\.client\(|\.client\(\s*[\"']|\bcreate_client\(|session\.client\(")
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for folder in ("shared", "functions", "infrastructure")
        for path in sorted((root / folder).rglob("*.py"))
        if path != root / "shared" / "tickwork" / "aws" / "clients.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if building.search(line) and "clients.client(" not in line and "factory.client(" not in line
    ]
    assert offenders == []
