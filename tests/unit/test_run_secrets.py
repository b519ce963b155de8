"""A run's secrets, resolved (tickwork.executor.secrets) over stand-in clients: the cache's 5 minutes on the clock,
which errors fail the run for good (named, without the value) and which are retried, and the values hidden from the
logger's mask until the run is released."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from tickwork.aws.secrets import SecretStores
from tickwork.executor.secrets import RunSecrets, SecretCache, SecretUnavailable
from tickwork.jobtypes import registry
from tickwork.model.clock import FakeClock
from tickwork.model.secret_references import SecretAllowance, SecretReference
from tickwork.model.targets import TargetRules
from tickwork.observability import secret_mask

ACME = SecretAllowance("tickwork/", "acme")
CONTEXT = TargetRules().context("acme")


class Secrets:
    """A stand-in Secrets Manager client: `values` by name, or `error` (an AWS error code) for every call."""

    def __init__(self, values: dict[str, Any], error: str | None = None) -> None:
        self.values, self.error, self.calls = values, error, 0

    def get_secret_value(self, SecretId: str) -> dict[str, Any]:
        self.calls += 1
        if self.error is not None:
            raise ClientError({"Error": {"Code": self.error, "Message": "no"}}, "GetSecretValue")
        return self.values[SecretId]


def _run_secrets(client: Secrets, clock: FakeClock | None = None) -> RunSecrets:
    stores = SecretStores(lambda: client, lambda: None)
    return RunSecrets(SecretCache(stores, clock or FakeClock(datetime(2026, 11, 28, tzinfo=UTC))), ACME)


def _echo(secrets: RunSecrets, payload: dict[str, Any]) -> dict[str, Any]:
    return secrets.payload(registry.get("echo"), payload, CONTEXT).model_dump()


def test_a_value_is_read_once_per_five_minutes_then_again():
    client = Secrets({"tickwork/acme/t": {"SecretString": "v1"}})
    clock = FakeClock(datetime(2026, 11, 28, tzinfo=UTC))
    cache = SecretCache(SecretStores(lambda: client, lambda: None), clock)
    reference = SecretReference.of({"$secret": "tickwork/acme/t"})
    assert cache.raw(reference) == "v1"
    client.values["tickwork/acme/t"] = {"SecretString": "v2"}
    clock.advance(timedelta(minutes=5).total_seconds() - 1)
    assert cache.raw(reference) == "v1"
    clock.advance(1)
    assert cache.raw(reference) == "v2"
    assert client.calls == 2


@pytest.mark.parametrize("code", ["ResourceNotFoundException", "AccessDeniedException", "DecryptionFailure"])
def test_an_error_no_retry_can_change_fails_the_run_for_good_naming_the_reference(code):
    secrets = _run_secrets(Secrets({}, error=code))
    with pytest.raises(SecretUnavailable) as failed:
        _echo(secrets, {"auth": {"$secret": "tickwork/acme/t"}})
    assert "payload.auth" in str(failed.value)
    assert "tickwork/acme/t" in str(failed.value)
    assert code in str(failed.value)


@pytest.mark.parametrize("code", ["ThrottlingException", "InternalServiceError"])
def test_a_throttle_or_a_service_error_is_raised_as_it_is_and_retried(code):
    secrets = _run_secrets(Secrets({}, error=code))
    with pytest.raises(ClientError) as failed:
        _echo(secrets, {"auth": {"$secret": "tickwork/acme/t"}})
    assert not isinstance(failed.value, SecretUnavailable)


def test_a_secret_of_binary_only_fails_the_run_for_good():
    secrets = _run_secrets(Secrets({"tickwork/acme/t": {"SecretBinary": b"xx"}}))
    with pytest.raises(SecretUnavailable, match="no string"):
        _echo(secrets, {"auth": {"$secret": "tickwork/acme/t"}})


@pytest.mark.parametrize(
    ("stored", "fragment"),
    [
        ("not json at all: v-secret-1", "not a JSON object"),
        ('{"user": "u"}', "no string at that key"),
        ('{"password": 5}', "no string at that key"),
    ],
)
def test_a_json_key_that_is_not_there_fails_the_run_for_good_without_the_value(stored, fragment):
    secrets = _run_secrets(Secrets({"tickwork/acme/t": {"SecretString": stored}}))
    with pytest.raises(SecretUnavailable, match=fragment) as failed:
        _echo(secrets, {"auth": {"$secret": "tickwork/acme/t#password"}})
    assert stored not in str(failed.value)
    secrets.release()


def test_a_reference_outside_the_allowance_is_refused_before_anything_is_read():
    client = Secrets({"tickwork/globex/t": {"SecretString": "theirs"}})
    with pytest.raises(SecretUnavailable, match="tickwork/acme/"):
        _echo(_run_secrets(client), {"auth": {"$secret": "tickwork/globex/t"}})
    assert client.calls == 0


def test_no_stores_wired_fails_the_run_naming_the_reference():
    with pytest.raises(SecretUnavailable, match="no secret stores"):
        _echo(RunSecrets(None, ACME), {"auth": {"$secret": "tickwork/acme/t"}})


def test_the_values_are_hidden_from_the_logs_until_the_run_is_released():
    client = Secrets({"tickwork/acme/t": {"SecretString": '{"password": "pw-31337-hidden"}'}})
    secrets = _run_secrets(client)
    assert _echo(secrets, {"auth": {"$secret": "tickwork/acme/t#password"}})["auth"] == "pw-31337-hidden"
    assert secret_mask.text("x pw-31337-hidden y") == "x *** y"
    secrets.release()
    assert secret_mask.text("x pw-31337-hidden y") == "x pw-31337-hidden y"


def test_a_masked_log_records_fields_keep_their_types():
    """The masking filter edits the record before any handler reads it: a field it masks inside (a validation
    error's `loc` path, a tuple) stays what it was, for every reader after it, while values are hidden."""
    import logging

    from tickwork.observability import logger

    client = Secrets({"tickwork/acme/t": {"SecretString": "pw-typed-hidden"}})
    secrets = _run_secrets(client)
    _echo(secrets, {"auth": {"$secret": "tickwork/acme/t"}})
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        logger.warning("refused", extra={"errors": [{"loc": ("job", "pw-typed-hidden")}]})
    finally:
        logger.removeHandler(handler)
        secrets.release()
    (record,) = seen
    assert record.errors == [{"loc": ("job", "***")}]  # type: ignore[attr-defined]
