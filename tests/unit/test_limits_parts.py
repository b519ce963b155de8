"""The pure parts of limits and Retry-After: the fields' checks, the semaphore's wait, Retry-After's forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from pydantic import ValidationError
from tickwork.control.api_bodies import JobSpec, JobUpdate
from tickwork.executor.limits import (
    SEMAPHORE_WAIT_MAX_SECONDS,
    Deferral,
    Holds,
    RunLimits,
    semaphore_wait_seconds,
    slot_name,
)
from tickwork.jobtypes.http import retry_after_seconds
from tickwork.model.policies import ConcurrencyLimit, RateLimit, RetryPolicy
from tickwork.model.run_target import RunTarget
from tickwork.model.states import DeferReason
from tickwork.model.tenant_settings import TenantSettings
from tickwork.model.workflow.definition import WorkflowStep
from tickwork.store import TENANT_SEMAPHORE, RateAdmission

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class Fixed:
    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def test_a_rate_is_an_interval_rounded_up_so_it_is_never_exceeded():
    assert RateLimit(key="k", per_second=3).interval_ms == 334
    assert RateLimit(key="k", per_minute=6).interval_ms == 10_000
    assert RateLimit(key="k", per_minute=1 / 1440).interval_ms == 86_400_000
    assert RateLimit(key="k", per_minute=6).model_dump() == {"key": "k", "per_minute": 6}  # the unit given only


@pytest.mark.parametrize(
    ("rate", "fragment"),
    [
        ({"key": "k"}, "exactly one of per_second and per_minute"),
        ({"key": "k", "per_second": 1, "per_minute": 60}, "exactly one of per_second and per_minute"),
        ({"key": "k", "per_second": 0}, "greater than or equal to 0.0000115"),  # one a day
        ({"key": "k", "per_minute": -1}, "greater than or equal to 0.000694"),
        ({"key": "k", "per_minute": 1e-9}, "greater than or equal to 0.000694"),
        ({"key": "k", "per_second": 1001}, "less than or equal to 1000"),
        ({"key": "k", "per_second": None}, "valid number"),  # absent, never null
        ({"key": "k", "per_second": "5"}, "must be a number"),
        ({"key": "", "per_second": 5}, "at least 1 character"),
        ({"key": "k" * 129, "per_second": 5}, "at most 128 characters"),
        ({"key": "k", "per_hour": 5}, "Extra inputs"),
    ],
)
def test_a_bad_rate_limit_is_refused(rate, fragment):
    with pytest.raises(ValidationError) as info:
        RateLimit.model_validate(rate)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("concurrency", "field"),
    [
        ({"key": "k", "limit": 0}, ("concurrency", "limit")),
        ({"key": "k", "limit": 1001}, ("concurrency", "limit")),
        ({"key": "k"}, ("concurrency", "limit")),
        ({"limit": 2}, ("concurrency", "key")),
        ({"key": "k", "limit": 2, "extra": 1}, ("concurrency", "extra")),
    ],
)
def test_a_bad_concurrency_is_refused_naming_the_field(concurrency, field):
    body = {"name": "n", "type": "echo", "schedule": {"cron": "* * * * *"}, "concurrency": concurrency}
    with pytest.raises(ValidationError) as info:
        JobSpec.model_validate(body)
    assert [e["loc"] for e in info.value.errors()] == [field]


def test_the_patch_body_and_a_workflow_step_take_the_fields_too():
    patch = JobUpdate.model_validate(
        {"concurrency": {"key": "k", "limit": 2}, "rate_limit": {"key": "r", "per_second": 1}}
    )
    assert patch.changes().keys() == {"concurrency", "rate_limit"}
    with pytest.raises(ValidationError):
        JobUpdate.model_validate({"rate_limit": {"key": "r"}})
    step = WorkflowStep.model_validate({"id": "a", "type": "echo", "concurrency": {"key": "k", "limit": 1}})
    assert step.concurrency is not None
    assert step.concurrency.limit == 1
    with pytest.raises(ValidationError):
        WorkflowStep.model_validate({"id": "a", "type": "echo", "concurrency": {"key": "k", "limit": 0}})


def test_the_semaphore_wait_doubles_from_1_s_to_60_s_and_never_spins():
    assert semaphore_wait_seconds(0, Fixed(0.0)) == 1
    assert semaphore_wait_seconds(0, Fixed(1.0)) == 1
    assert [semaphore_wait_seconds(n, Fixed(1.0)) for n in range(1, 8)] == [2, 4, 8, 16, 32, 60, 60]
    # The jitter only spreads the upper half: never sooner than half the step.
    assert [semaphore_wait_seconds(n, Fixed(0.0)) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert semaphore_wait_seconds(10_000, Fixed(0.5)) <= SEMAPHORE_WAIT_MAX_SECONDS


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        (format_datetime(NOW + timedelta(seconds=90), usegmt=True), 90.0),
        ("Sat, 21 Nov 2026 12:05:00 GMT", 300.0),
        (format_datetime(NOW - timedelta(hours=1), usegmt=True), 0.0),  # already past: no wait
        ("soon", None),
        ("-5", None),
        ("1.5", None),
        (None, None),
    ],
)
def test_retry_after_seconds_or_http_date(header, seconds):
    assert retry_after_seconds(header, NOW) == seconds


class Items:
    """LimitItems in memory, recording what was asked of it; `full` semaphores and `rate_wait_ms` refuse."""

    def __init__(self, *, full: tuple[str, ...] = (), lost: tuple[str, ...] = (), rate_wait_ms: int = 0) -> None:
        self.full = full
        self.lost = lost  # holds that lapsed and another run's acquire dropped
        self.rate_wait_ms = rate_wait_ms
        self.calls: list[tuple[str, str]] = []

    def acquire(self, tenant: str, sort: str, **_: object) -> bool:
        self.calls.append(("acquire", sort))
        return sort not in self.full

    def extend(self, tenant: str, sort: str, **_: object) -> bool:
        self.calls.append(("extend", sort))
        return sort not in self.lost

    def release(self, tenant: str, sort: str, **_: object) -> None:
        self.calls.append(("release", sort))

    def admit_rate(self, tenant: str, sort: str, **_: object) -> RateAdmission:
        self.calls.append(("rate", sort))
        return RateAdmission(self.rate_wait_ms == 0, self.rate_wait_ms)


class Quotas:
    def __init__(self, max_concurrent_runs: int | None) -> None:
        self.settings = TenantSettings(max_concurrent_runs=max_concurrent_runs)

    def settings_of(self, tenant: str) -> TenantSettings:
        return self.settings


def _target(**limits: object) -> RunTarget:
    return RunTarget(
        owner_id="j1", tenant="acme", type="echo", payload={}, retry=RetryPolicy(), timeout_seconds=60, **limits
    )


LIMITED = {"concurrency": ConcurrencyLimit(key="k", limit=2), "rate_limit": RateLimit(key="r", per_second=2)}


def _admit(items: Items, quota: int | None, target: RunTarget, deferred: int = 0) -> Holds | Deferral:
    return RunLimits(items, Quotas(quota), rng=Fixed(1.0)).take(
        target, holder="h", deferred=deferred, until=NOW + timedelta(seconds=60), now=NOW
    )


def test_nothing_is_asked_of_the_store_for_a_run_nothing_limits():
    items = Items()
    holds = _admit(items, None, _target())
    assert isinstance(holds, Holds)
    holds.extend(NOW)
    holds.release()
    assert items.calls == []


def test_the_tenant_quota_then_the_key_then_the_rate():
    items = Items()
    holds = _admit(items, 5, _target(**LIMITED))
    assert isinstance(holds, Holds)
    assert items.calls == [("acquire", TENANT_SEMAPHORE), ("acquire", "LIMIT#CONCURRENCY#k"), ("rate", "LIMIT#RATE#r")]
    holds.release()
    assert items.calls[3:] == [("release", "LIMIT#CONCURRENCY#k"), ("release", TENANT_SEMAPHORE)]


def test_a_refused_rate_gives_back_the_slots_taken_and_says_its_exact_wait():
    items = Items(rate_wait_ms=2_300)
    deferral = _admit(items, 5, _target(**LIMITED))
    assert deferral == Deferral(DeferReason.RATE_LIMIT, 3)
    assert items.calls[3:] == [("release", "LIMIT#CONCURRENCY#k"), ("release", TENANT_SEMAPHORE)]


def test_a_full_key_gives_back_the_tenant_slot_and_backs_off_on_the_deferred_count():
    items = Items(full=("LIMIT#CONCURRENCY#k",))
    assert _admit(items, 5, _target(**LIMITED), deferred=3) == Deferral(DeferReason.CONCURRENCY_KEY, 8)
    assert items.calls == [
        ("acquire", TENANT_SEMAPHORE),
        ("acquire", "LIMIT#CONCURRENCY#k"),
        ("release", TENANT_SEMAPHORE),
    ]
    assert _admit(Items(full=(TENANT_SEMAPHORE,)), 1, _target()) == Deferral(DeferReason.TENANT_CONCURRENCY, 1)


def test_holds_kept_past_the_executors_wait_are_extended_but_not_released():
    items = Items()
    holds = _admit(items, None, _target(concurrency=ConcurrencyLimit(key="k", limit=1)))
    assert isinstance(holds, Holds)
    holds.keep_until_lease_ends()
    holds.release()
    holds.extend(NOW)
    assert items.calls == [("acquire", "LIMIT#CONCURRENCY#k"), ("extend", "LIMIT#CONCURRENCY#k")]


def test_extending_holds_names_the_slots_another_run_took():
    items = Items(lost=("LIMIT#CONCURRENCY#k",))
    holds = _admit(items, 5, _target(**LIMITED))
    assert isinstance(holds, Holds)
    assert holds.extend(NOW) == ["its concurrency key 'k' slot"]
    assert [slot_name(sort) for sort in (TENANT_SEMAPHORE, "LIMIT#CONCURRENCY#k")] == [
        "the tenant's max_concurrent_runs slot",
        "its concurrency key 'k' slot",
    ]
