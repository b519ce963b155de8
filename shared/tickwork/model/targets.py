"""Where this stack's job types may reach: a value the template's settings make, read by the payload models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TargetRules:
    """Where this stack's job types may reach, as its template grants it: the private networks `http` may call
    (HttpAllowlist) and the functions `lambda` may invoke (InvokableFunctionArns, wildcards allowed, and the ARN
    prefix that makes a bare function name an ARN). A payload model reads them from its validation context
    (`context()`), so a target outside them is refused when the job is created or changed, and again when it runs.
    No function patterns: invocation is not checked (a wiring built without the template's settings)."""

    http_allowlist: tuple[str, ...] = ()
    invokable_functions: tuple[str, ...] = ()
    function_arn_prefix: str = ""

    def context(self) -> dict[str, Any]:
        return {"targets": self}

    @staticmethod
    def of(context: dict[str, Any] | None) -> TargetRules:
        return (context or {}).get("targets") or DEFAULT_TARGETS


# No private network allowed, no function list: what a wiring built without the template's settings checks.
DEFAULT_TARGETS = TargetRules()
