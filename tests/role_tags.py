"""Roles' `tickwork:tenant` tags as IAM would answer them, without IAM: what callers.caller_of is given in unit
tests (tickwork.aws.role_tags reads the real ones)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RoleTagsOf:
    """`tags` maps a role name to its tag's value (a role not in it has none); `asked` lists the roles looked up;
    `error`, when set, is raised by every lookup (IAM failing)."""

    tags: dict[str, str] = field(default_factory=dict)
    error: Exception | None = None
    asked: list[str] = field(default_factory=list)

    def tenant_tag(self, role: str) -> str | None:
        self.asked.append(role)
        if self.error is not None:
            raise self.error
        return self.tags.get(role)


UNTAGGED = RoleTagsOf()  # no role has the tag: every caller counts by its name
