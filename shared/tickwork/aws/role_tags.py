"""IAM's tags of the API's own account's roles, read for the tenant a role names by its `tickwork:tenant` tag
(tickwork.control.callers). Only ListRoleTags is called, and only for the roles callers sign with.

API Gateway's IAM authorizer hands the function the caller's ARN but none of its principal tags, so the function
asks IAM. A role's tag is kept per execution environment for CACHE_FOR after its read (by the injected clock): one
IAM call per role per period, not per request, and a retag is seen within the period. A read that fails is not
kept; the role's last read, if it is under KEEP_STALE_FOR old, answers instead (logged), and goes on answering
for RETRY_AFTER_SECONDS before IAM is asked again (a throttled IAM is not asked on every request), so a brief IAM
outage does not refuse callers already seen; otherwise the caller is refused (IdentityUnresolved, a 503), never
given the tenant its name alone would give, which the tag may have changed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from botocore.exceptions import BotoCoreError, ClientError

from tickwork.model.clock import Clock
from tickwork.model.errors import IdentityUnresolved
from tickwork.observability import logger

TENANT_TAG = "tickwork:tenant"
CACHE_FOR = timedelta(minutes=5)
KEEP_STALE_FOR = timedelta(hours=1)
MAX_CACHED = 1024  # roles kept per execution environment; past it, the oldest read is dropped
RETRY_AFTER_SECONDS = 5
READ_TIMEOUT_SECONDS = 3  # one attempt, at most this long: the API function has 10 s
# No wait can change these: the API's role may not call ListRoleTags (the template grants it), or the request is
# one IAM refuses as malformed.
_FOR_GOOD = {"AccessDenied", "AccessDeniedException", "ValidationError", "InvalidInput"}


class _Unreadable(Exception):
    """IAM did not tell the role's tags: its error's code, and whether waiting may help."""

    def __init__(self, code: str, *, retry: bool) -> None:
        super().__init__(code)
        self.code, self.retry = code, retry


class _Kept(NamedTuple):
    read_at: datetime
    value: str | None
    ask_again_at: datetime  # until then the read answers without IAM


class RoleTenantTags:
    """The `tickwork:tenant` tag of each role asked about, kept `keep_for` after its read. Thread-safe (the local
    runtime serves requests on threads); two requests that miss at once may both read."""

    def __init__(self, iam: Callable[[], Any], clock: Clock, *, keep_for: timedelta = CACHE_FOR) -> None:
        self._iam, self.clock, self.keep_for = iam, clock, keep_for
        self._kept: dict[str, _Kept] = {}
        self._lock = threading.Lock()

    def tenant_tag(self, role: str) -> str | None:
        """The value of the role's `tickwork:tenant` tag (unchecked), None when it has none or the role is gone;
        IdentityUnresolved when IAM cannot say and no read of the last KEEP_STALE_FOR can stand in."""
        now = self.clock.now()
        with self._lock:
            kept = self._kept.get(role)
        if kept is not None and now < kept.ask_again_at:
            return kept.value
        try:
            value = self._read(role)
        except _Unreadable as exc:
            if kept is not None and now - kept.read_at < KEEP_STALE_FOR:
                logger.warning(
                    "role tags unreadable; the last read answers",
                    extra={
                        "role": role,
                        "error_code": exc.code,
                        "tag": TENANT_TAG,
                        "read_at": kept.read_at.isoformat(),
                    },
                )
                quiet = min(now + timedelta(seconds=RETRY_AFTER_SECONDS), kept.read_at + KEEP_STALE_FOR)
                with self._lock:
                    self._kept[role] = kept._replace(ask_again_at=quiet)
                return kept.value
            if exc.retry:
                logger.warning(
                    "role tags unreadable; the caller is refused",
                    extra={"role": role, "error_code": exc.code, "tag": TENANT_TAG},
                )
            else:
                logger.error(
                    "role tags unreadable for good; the caller is refused",
                    extra={"role": role, "error_code": exc.code, "tag": TENANT_TAG},
                )
            advice = "try again shortly" if exc.retry else "the API's role may not read role tags (iam:ListRoleTags)"
            raise IdentityUnresolved(
                f"the caller's tenant could not be resolved: reading the tags of the role {role} from IAM failed "
                f"({exc.code}); {advice}",
                retry_after=RETRY_AFTER_SECONDS if exc.retry else None,
            ) from None
        with self._lock:
            self._kept.pop(role, None)  # re-inserted last: the dict's order is the reads' order
            self._kept[role] = _Kept(now, value, now + self.keep_for)
            while len(self._kept) > MAX_CACHED:
                del self._kept[next(iter(self._kept))]
        return value

    def _read(self, role: str) -> str | None:
        marker: dict[str, str] = {}
        try:
            while True:
                answer = self._iam().list_role_tags(RoleName=role, **marker)
                for tag in answer.get("Tags", []):
                    if tag.get("Key") == TENANT_TAG:
                        return str(tag.get("Value", ""))
                if not answer.get("IsTruncated"):
                    return None
                marker = {"Marker": answer["Marker"]}
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "") or "unknown"
            if code == "NoSuchEntity":
                return None  # a role deleted since its session began carries no tag
            raise _Unreadable(code, retry=code not in _FOR_GOOD) from None
        except BotoCoreError as exc:  # no answer: a lost connection, a timeout
            raise _Unreadable(type(exc).__name__, retry=True) from None
