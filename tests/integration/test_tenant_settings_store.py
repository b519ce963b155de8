"""Tenant settings as stored and as the tick and executor read them (through a short-lived cache)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from tickwork.model.tenant_settings import DEFAULTS, TenantSettings


def test_settings_round_trip_and_absent_tenants_get_the_defaults(pipeline: Any) -> None:
    records = pipeline.services.tenant_records
    records.put_settings("acme", TenantSettings(weight=3, max_runs_per_minute=60), pipeline.clock.now())

    assert records.get_settings("acme") == TenantSettings(weight=3, max_runs_per_minute=60)
    assert records.get_settings("nobody") is None
    assert records.get_settings_many(["acme", "nobody"]) == {"acme": TenantSettings(weight=3, max_runs_per_minute=60)}


def test_a_put_replaces_the_whole_document(pipeline: Any) -> None:
    records = pipeline.services.tenant_records
    records.put_settings("acme", TenantSettings(weight=3, max_active_jobs=5), pipeline.clock.now())
    records.put_settings("acme", TenantSettings(max_concurrent_runs=2), pipeline.clock.now())

    assert records.get_settings("acme") == TenantSettings(weight=1, max_concurrent_runs=2)


def test_the_directory_reads_each_tenant_once_per_cache_period(pipeline: Any) -> None:
    directory = pipeline.services.tenant_directory
    pipeline.services.tenant_records.put_settings("acme", TenantSettings(weight=7), pipeline.clock.now())
    pipeline.calls.clear()

    assert directory.settings_for(["acme", "beta"]) == {"acme": TenantSettings(weight=7), "beta": DEFAULTS}
    assert directory.settings_of("acme").weight == 7
    assert pipeline.calls.count("BatchGetItem") == 1

    pipeline.services.tenant_records.put_settings("acme", TenantSettings(weight=2), pipeline.clock.now())
    assert directory.settings_of("acme").weight == 7  # still cached
    pipeline.clock.advance(31)
    assert directory.settings_of("acme").weight == 2
    assert pipeline.calls.count("BatchGetItem") == 2


@pytest.mark.parametrize(
    "bad",
    [{"weight": 0}, {"weight": 101}, {"weight": "3"}, {"max_active_jobs": 0}, {"max_runs_per_minute": -1}, {"x": 1}],
)
def test_bad_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TenantSettings.model_validate(bad)


def test_a_put_another_put_overtakes_reads_again_so_what_it_replaced_is_exact(pipeline: Any) -> None:
    """Between a PUT's read and its conditional put, another admin's PUT wins: the first is read and tried again,
    and its audit record's `before` is what it really replaced."""
    records = pipeline.services.tenant_records
    records.put_settings("acme", TenantSettings(weight=2), pipeline.clock.now())
    befores: list[TenantSettings | None] = []

    def audit_of(before: TenantSettings | None) -> None:
        befores.append(before)
        if len(befores) == 1:  # the other admin's PUT lands just after this one's read
            records.put_settings("acme", TenantSettings(weight=7), pipeline.clock.now())

    replaced = records.put_settings("acme", TenantSettings(weight=4), pipeline.clock.now(), audit_of=audit_of)
    assert befores == [TenantSettings(weight=2), TenantSettings(weight=7)]
    assert replaced == TenantSettings(weight=7)
    assert records.get_settings("acme") == TenantSettings(weight=4)
