"""A secret by reference: in place of a value anywhere in a job's payload (a workflow step's, a compensation's),
`{"$secret": "<Secrets Manager ARN or name>[#json-key]"}` or `{"$parameter": "<SSM SecureString name>"}`.

The reference is what is stored, listed and returned; the value is fetched by the executor just before the handler
runs (tickwork.executor.secrets) and is never stored, logged or returned. A tenant may name only its own secrets:
those under `<prefix><tenant>/`, the stack's SecretNamePrefix (`tickwork/` by default) followed by the tenant's
name, which the executor's role may read (template.yaml). `refusal` is the one check, made when a payload is
validated (create, update, a trigger's payload, every step and compensation) and again before each fetch.

A dict with a `$secret` or `$parameter` key is always read as a reference: those keys are reserved in payloads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

SECRET_KEY = "$secret"  # noqa: S105 - a reserved key, not a password
PARAMETER_KEY = "$parameter"
DEFAULT_SECRET_PREFIX = "tickwork/"  # noqa: S105 - a name prefix
MASK = "***"

# arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-<6 random characters>
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:(?P<name>.+)$")
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")  # what Secrets Manager allows in a name
_PARAMETER_NAME = re.compile(r"^[A-Za-z0-9_./-]{1,1011}$")  # what SSM allows
_JSON_KEY = re.compile(r"^[^#]{1,256}$")

Location = tuple[str | int, ...]


class SecretKind(StrEnum):
    SECRET = "secret"  # noqa: S105 - Secrets Manager
    PARAMETER = "parameter"  # SSM Parameter Store, decrypted


@dataclass(frozen=True)
class SecretAllowance:
    """Which secrets a tenant's payloads may name: those under `<prefix><tenant>/`, and by ARN only this stack's
    account's and region's (`arn_prefix`, `arn:<partition>:secretsmanager:<region>:<account>:secret:`; empty: not
    checked). No tenant: none."""

    prefix: str = DEFAULT_SECRET_PREFIX
    tenant: str | None = None
    arn_prefix: str = ""

    @property
    def tenant_prefix(self) -> str | None:
        # A tenant whose name holds a slash would share its names with another's (`a/b/x` is tenant a's `b/x`).
        if self.tenant is None or "/" in self.tenant:
            return None
        return f"{self.prefix}{self.tenant}/"


@dataclass(frozen=True)
class SecretReference:
    """What a reference names: a secret (by ARN or name, and the key of its JSON value, if any) or a parameter."""

    kind: SecretKind
    source: str  # as written: the secret's ARN or name, the parameter's name
    json_key: str | None = None

    @property
    def name(self) -> str:
        """The name the allowance is checked on: an ARN's name part; a parameter's without its leading slash
        (IAM's parameter ARN spells both `/a/b` and `a/b` as `parameter/a/b`)."""
        if self.kind is SecretKind.PARAMETER:
            return self.source.removeprefix("/")
        arn = _SECRET_ARN.match(self.source)
        return arn.group("name") if arn else self.source

    @property
    def text(self) -> str:
        """The reference as written (never its value): what an error names."""
        if self.kind is SecretKind.PARAMETER:
            return json.dumps({PARAMETER_KEY: self.source})
        key = f"#{self.json_key}" if self.json_key is not None else ""
        return json.dumps({SECRET_KEY: f"{self.source}{key}"})

    def refusal(self, allowance: SecretAllowance) -> str | None:
        """Why this tenant may not use this reference, or None when it may."""
        prefix = allowance.tenant_prefix
        if prefix is None:
            return f"{self.text}: secret references are unavailable to tenant {allowance.tenant!r}"
        if not self.name.startswith(prefix) or len(self.name) == len(prefix):
            return f"{self.text} is outside this tenant's secrets: names must start with {prefix!r}"
        arn = self.kind is SecretKind.SECRET and _SECRET_ARN.match(self.source)
        if arn and allowance.arn_prefix and not self.source.startswith(allowance.arn_prefix):
            return f"{self.text} is another account's or region's: this stack reads only {allowance.arn_prefix}..."
        return None

    @staticmethod
    def of(value: dict[str, Any]) -> SecretReference:
        """A reference read from its JSON object; ValueError saying what is wrong with a malformed one."""
        keys = set(value) & {SECRET_KEY, PARAMETER_KEY}
        if len(keys) != 1 or len(value) != 1:
            raise ValueError(f"a secret reference is an object with one key, {SECRET_KEY} or {PARAMETER_KEY}")
        (key,) = keys
        written = value[key]
        if not isinstance(written, str) or not written:
            raise ValueError(f"{key} must be a non-empty string")
        if key == PARAMETER_KEY:
            if not _PARAMETER_NAME.fullmatch(written):
                raise ValueError(f"{key} must be an SSM parameter name (letters, digits, _ . - /)")
            return SecretReference(SecretKind.PARAMETER, written)
        source, hash_sign, json_key = written.partition("#")
        if hash_sign and not _JSON_KEY.fullmatch(json_key):
            raise ValueError(f"{key}'s JSON key (after #) must be 1 to 256 characters, without #")
        reference = SecretReference(SecretKind.SECRET, source, json_key if hash_sign else None)
        if not _SECRET_NAME.fullmatch(reference.name):
            raise ValueError(f"{key} must be a Secrets Manager ARN or name (letters, digits, / _ + = . @ -)")
        return reference


def is_reference(value: object) -> bool:
    """A JSON object meant as a reference (a well-formed one or not): it has a reserved key."""
    return isinstance(value, dict) and (SECRET_KEY in value or PARAMETER_KEY in value)


def references_in(payload: Any, at: Location = ()) -> Iterator[tuple[Location, dict[str, Any]]]:
    """Every reference in a JSON value, with where it is (("headers", "Authorization"))."""
    if is_reference(payload):
        yield at, payload
    elif isinstance(payload, dict):
        for key, value in payload.items():
            yield from references_in(value, (*at, key))
    elif isinstance(payload, list):
        for index, value in enumerate(payload):
            yield from references_in(value, (*at, index))


def reference_errors(payload: Any, allowance: SecretAllowance) -> list[tuple[Location, str]]:
    """Each malformed reference in a payload, and each outside the tenant's allowance, with where it is."""
    errors = []
    for at, value in references_in(payload):
        try:
            reason = SecretReference.of(value).refusal(allowance)
        except ValueError as exc:
            reason = str(exc)
        if reason is not None:
            errors.append((at, reason))
    return errors


def with_values(payload: Any, value_of: Callable[[Location, SecretReference], str], at: Location = ()) -> Any:
    """The payload with each reference replaced by its value (`value_of`, told where it is)."""
    if is_reference(payload):
        return value_of(at, SecretReference.of(payload))
    if isinstance(payload, dict):
        return {key: with_values(value, value_of, (*at, key)) for key, value in payload.items()}
    if isinstance(payload, list):
        return [with_values(value, value_of, (*at, index)) for index, value in enumerate(payload)]
    return payload


def _reference_or_string(value: str | dict[str, str]) -> str | dict[str, str]:
    if isinstance(value, dict):
        SecretReference.of(value)  # its shape; whether the tenant may name it is checked on the whole payload
    return value


def _named(key: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {key: {"type": "string", "minLength": 1}},
        "required": [key],
        "additionalProperties": False,
    }


# A payload field that takes a secret by reference (an http header's value): a string, or a reference that the
# executor replaces by its value (a string) before the handler sees the payload. Its schema is inline (no $defs),
# so that a payload model using it keeps its whole schema in the OpenAPI document.
SecretOrStr = Annotated[
    str | dict[str, str],
    AfterValidator(_reference_or_string),
    WithJsonSchema({"anyOf": [{"type": "string"}, _named(SECRET_KEY), _named(PARAMETER_KEY)]}),
]


def revealed(value: str | dict[str, str]) -> str:
    """A SecretOrStr field's value in a handler: its string (the executor resolved every reference before the
    handler was called)."""
    if not isinstance(value, str):
        raise TypeError("a secret reference reached a handler unresolved")
    return value
