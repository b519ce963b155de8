"""Secrets Manager and SSM Parameter Store, read for the secrets a payload names by reference
(tickwork.executor.secrets). Only these two calls, and nothing of a value is logged here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

# What no retry can change: the name is wrong, the role may not read it, its key may not decrypt it, it is being
# deleted. Anything else (a throttle, a 5xx, a lost connection) is raised as it is, and the run retried.
_FOR_GOOD = {
    "ResourceNotFoundException",
    "AccessDeniedException",
    "AccessDenied",
    "DecryptionFailure",
    "InvalidRequestException",
    "InvalidParameterException",
    "ParameterNotFound",
    "ParameterVersionNotFound",
    "InvalidKeyId",
    "ValidationException",
}


class SecretNotReadable(LookupError):
    """The secret or parameter cannot be read, and trying again would not help; the message says why (the AWS
    error's code, never a value)."""


class SecretStores:
    """Reads secrets' and parameters' current values; each client is called for on first use (built lazily)."""

    def __init__(self, secretsmanager: Callable[[], Any], ssm: Callable[[], Any]) -> None:
        self._secretsmanager = secretsmanager
        self._ssm = ssm

    def secret_string(self, secret_id: str) -> str:
        """The secret's current SecretString (a secret holding only binary has none: SecretNotReadable)."""
        try:
            answer = self._secretsmanager().get_secret_value(SecretId=secret_id)
        except ClientError as exc:
            raise _not_readable(exc) from None
        value = answer.get("SecretString")
        if not isinstance(value, str):
            raise SecretNotReadable("it holds no string (SecretBinary is not supported)")
        return value

    def parameter(self, name: str) -> str:
        """The parameter's value, decrypted (a SecureString's)."""
        try:
            answer = self._ssm().get_parameter(Name=name, WithDecryption=True)
        except ClientError as exc:
            raise _not_readable(exc) from None
        return str(answer["Parameter"]["Value"])


def _not_readable(exc: ClientError) -> Exception:
    code = exc.response.get("Error", {}).get("Code", "")
    if code in _FOR_GOOD:
        return SecretNotReadable(f"{code} (the name is wrong, or this stack's executor may not read it)")
    return exc
