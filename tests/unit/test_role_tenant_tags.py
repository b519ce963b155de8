"""tickwork.aws.role_tags: a role's `tickwork:tenant` tag read from IAM once per role per period (by the injected
clock), in a bounded cache; every way the read fails refuses the caller, logged, unless a recent read stands in.
IAM is a fake here (tests/api/test_role_tag_tenants.py reads moto's through the API)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError
from tickwork.aws import role_tags
from tickwork.aws.role_tags import CACHE_FOR, KEEP_STALE_FOR, RETRY_AFTER_SECONDS, RoleTenantTags
from tickwork.model.clock import FakeClock
from tickwork.model.errors import IdentityUnresolved

from tests.harness import START


class FakeIam:
    """ListRoleTags over `roles` (role -> tags), in pages of `page` tags; `error` raised instead while set."""

    def __init__(self, roles: dict[str, dict[str, str]], page: int = 100) -> None:
        self.roles, self.page, self.error = roles, page, None
        self.asked: list[tuple[str, str | None]] = []

    def list_role_tags(self, RoleName: str, Marker: str | None = None) -> dict[str, Any]:
        self.asked.append((RoleName, Marker))
        if self.error is not None:
            raise self.error
        if RoleName not in self.roles:
            raise _client_error("NoSuchEntity", 404)
        tags = [{"Key": k, "Value": v} for k, v in self.roles[RoleName].items()]
        start = int(Marker or 0)
        answer: dict[str, Any] = {"Tags": tags[start : start + self.page], "IsTruncated": start + self.page < len(tags)}
        if answer["IsTruncated"]:
            answer["Marker"] = str(start + self.page)
        return answer


def _client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "ListRoleTags"
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


def _tags(iam: FakeIam, clock: FakeClock) -> RoleTenantTags:
    return RoleTenantTags(lambda: iam, clock)


def test_a_role_s_tag_is_read_once_per_period_and_again_after_it(clock):
    iam = FakeIam({"ci": {"team": "x", "tickwork:tenant": "acme"}, "bare": {}})
    tags = _tags(iam, clock)
    assert tags.tenant_tag("ci") == "acme"
    assert tags.tenant_tag("bare") is None
    clock.advance((CACHE_FOR - timedelta(seconds=1)).total_seconds())
    iam.roles["ci"]["tickwork:tenant"] = "globex"  # a retag: seen after the period
    assert tags.tenant_tag("ci") == "acme"
    assert tags.tenant_tag("bare") is None  # "no tag" is kept too
    assert [role for role, _ in iam.asked] == ["ci", "bare"]
    clock.advance(1)
    assert tags.tenant_tag("ci") == "globex"
    assert [role for role, _ in iam.asked] == ["ci", "bare", "ci"]


def test_a_role_gone_has_no_tag(clock):
    assert _tags(FakeIam({}), clock).tenant_tag("deleted-since") is None


def test_every_page_of_a_role_s_tags_is_read_until_the_tag(clock):
    roles = {
        "many": {**{f"k{i}": "v" for i in range(7)}, "tickwork:tenant": "acme"},
        "none": {f"k{i}": "v" for i in range(7)},
    }
    iam = FakeIam(roles, page=3)
    tags = _tags(iam, clock)
    assert tags.tenant_tag("many") == "acme"
    assert tags.tenant_tag("none") is None
    assert iam.asked == [("many", None), ("many", "3"), ("many", "6"), ("none", None), ("none", "3"), ("none", "6")]


def test_the_cache_is_bounded_dropping_the_oldest_read(clock, monkeypatch):
    monkeypatch.setattr(role_tags, "MAX_CACHED", 2)
    iam = FakeIam({"a": {}, "b": {}, "c": {}})
    tags = _tags(iam, clock)
    for role in ("a", "b", "c", "b", "c"):
        tags.tenant_tag(role)
    assert [role for role, _ in iam.asked] == ["a", "b", "c"]
    tags.tenant_tag("a")  # dropped when c came
    assert [role for role, _ in iam.asked] == ["a", "b", "c", "a"]


@pytest.mark.parametrize(
    ("error", "code", "retry_after"),
    [
        (_client_error("Throttling", 400), "Throttling", 5),
        (_client_error("ServiceFailure", 500), "ServiceFailure", 5),
        (_client_error("AccessDenied", 403), "AccessDenied", None),
        (ConnectTimeoutError(endpoint_url="https://iam.amazonaws.com"), "ConnectTimeoutError", 5),
        (ReadTimeoutError(endpoint_url="https://iam.amazonaws.com"), "ReadTimeoutError", 5),
    ],
    ids=["throttled", "5xx", "access denied", "no connection", "no answer"],
)
def test_a_failed_read_refuses_the_caller_logged_and_is_not_kept(clock, caplog, error, code, retry_after):
    iam = FakeIam({"ci": {"tickwork:tenant": "acme"}})
    iam.error = error
    tags = _tags(iam, clock)
    with pytest.raises(IdentityUnresolved, match=rf"the tags of the role ci from IAM failed \({code}\)") as refused:
        tags.tenant_tag("ci")
    assert refused.value.retry_after == retry_after
    (record,) = [r for r in caplog.records if r.getMessage().startswith("role tags unreadable")]
    assert (record.role, record.error_code, record.tag) == ("ci", code, "tickwork:tenant")
    assert record.levelname == ("WARNING" if retry_after else "ERROR")
    iam.error = None
    assert tags.tenant_tag("ci") == "acme"  # the failure was not kept: the next request reads again
    assert len(iam.asked) == 2


def test_a_read_of_the_last_hour_stands_in_for_a_failed_one_and_no_older(clock, caplog):
    iam = FakeIam({"ci": {"tickwork:tenant": "acme"}})
    tags = _tags(iam, clock)
    assert tags.tenant_tag("ci") == "acme"
    iam.error = _client_error("Throttling", 400)
    clock.advance((KEEP_STALE_FOR - timedelta(seconds=1)).total_seconds())
    assert tags.tenant_tag("ci") == "acme"
    (stood_in,) = [r for r in caplog.records if r.getMessage().startswith("role tags unreadable")]
    assert (stood_in.getMessage(), stood_in.role, stood_in.error_code) == (
        "role tags unreadable; the last read answers",
        "ci",
        "Throttling",
    )
    clock.advance(1)
    with pytest.raises(IdentityUnresolved):
        tags.tenant_tag("ci")


def test_a_stood_in_read_answers_a_few_seconds_before_iam_is_asked_again(clock):
    iam = FakeIam({"ci": {"tickwork:tenant": "acme"}})
    tags = _tags(iam, clock)
    tags.tenant_tag("ci")
    iam.error = _client_error("Throttling", 400)
    clock.advance(CACHE_FOR.total_seconds())
    for _ in range(3):  # a throttled IAM is asked once, not on every request
        assert tags.tenant_tag("ci") == "acme"
    assert len(iam.asked) == 2
    clock.advance(RETRY_AFTER_SECONDS)
    iam.error = None
    iam.roles["ci"]["tickwork:tenant"] = "globex"
    assert tags.tenant_tag("ci") == "globex"
    assert len(iam.asked) == 3
    clock.advance(CACHE_FOR.total_seconds() - 1)
    assert tags.tenant_tag("ci") == "globex"  # a new read is kept its whole period
    assert len(iam.asked) == 3
