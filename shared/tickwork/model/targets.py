"""Where this stack's job types may reach, and which secrets they may read: a value the template's settings make,
read by the payload models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tickwork.model.secret_references import DEFAULT_SECRET_PREFIX, SecretAllowance


@dataclass(frozen=True)
class TargetRules:
    """Where this stack's job types may reach, as its template grants it: the private networks `http` may call
    (HttpAllowlist) and the functions `lambda` may invoke (InvokableFunctionArns, wildcards allowed, and the ARN
    prefix that makes a bare function name an ARN). A payload model reads them from its validation context
    (`context()`), so a target outside them is refused when the job is created or changed, and again when it runs.
    No function patterns: invocation is not checked (a wiring built without the template's settings). And the
    secrets a payload may name by reference (SecretNamePrefix: tickwork.model.secret_references), each tenant
    those under `<prefix><tenant>/`: the context says whose payload it is."""

    http_allowlist: tuple[str, ...] = ()
    invokable_functions: tuple[str, ...] = ()
    function_arn_prefix: str = ""
    secret_prefix: str = DEFAULT_SECRET_PREFIX
    secret_arn_prefix: str = ""  # this stack's account and region (empty: not checked)

    def context(self, tenant: str | None = None) -> dict[str, Any]:
        """The validation context of `tenant`'s payloads (no tenant: no secret reference is allowed)."""
        return {"targets": self, "tenant": tenant}

    @staticmethod
    def of(context: dict[str, Any] | None) -> TargetRules:
        return (context or {}).get("targets") or DEFAULT_TARGETS

    def secrets_for(self, tenant: str | None) -> SecretAllowance:
        """The secrets `tenant`'s payloads may name by reference."""
        return SecretAllowance(self.secret_prefix, tenant, self.secret_arn_prefix)

    @staticmethod
    def secrets_of(context: dict[str, Any] | None) -> SecretAllowance:
        """The secrets the payload being validated may name by reference."""
        return TargetRules.of(context).secrets_for((context or {}).get("tenant"))


# No private network allowed, no function list: what a wiring built without the template's settings checks.
DEFAULT_TARGETS = TargetRules()
