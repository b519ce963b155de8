"""tenancy.tenant_of on Powertools' APIGatewayProxyEventV2, and the ApiSettings it is given."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from pydantic import ValidationError
from tickwork.control.callers import Caller, caller_of, tenant_of
from tickwork.model.errors import Forbidden, Unauthenticated
from tickwork.settings import ApiSettings, TelemetryNames

from tests.role_tags import UNTAGGED

ACCOUNT = "123456789012"
IAM = ApiSettings.from_env({})


def _event(iam: dict | None = None, headers: dict | None = None, context: bool = True) -> APIGatewayProxyEventV2:
    raw: dict = {"rawPath": "/v1/jobs", "headers": headers or {}}
    if context:
        raw["requestContext"] = {"accountId": ACCOUNT, "http": {"method": "GET"}}
        if iam is not None:
            raw["requestContext"]["authorizer"] = {"iam": iam}
    return APIGatewayProxyEventV2(raw)


def _arn(resource: str, account: str = ACCOUNT) -> dict:
    return {"accountId": account, "userArn": f"arn:aws:sts::{account}:{resource}"}


def test_iam_is_the_default_mode():
    assert IAM.auth_mode == "iam"
    assert IAM.api_keys_file is None


@pytest.mark.parametrize(
    ("iam", "tenant"),
    [
        (_arn("assumed-role/tickwork-tenant-acme/alice"), "acme"),
        (_arn("assumed-role/tickwork-tenant-acme/alice", "210987654321"), "210987654321:role/tickwork-tenant-acme"),
        (_arn("assumed-role/deployer/ci"), f"{ACCOUNT}:role/deployer"),
        ({"accountId": ACCOUNT, "userArn": f"arn:aws:iam::{ACCOUNT}:user/ops/bob"}, f"{ACCOUNT}:user/bob"),
        ({"accountId": ACCOUNT, "userArn": f"arn:aws:iam::{ACCOUNT}:root"}, f"{ACCOUNT}:root"),
    ],
)
def test_iam_identities_map_to_tenants(iam, tenant):
    assert tenant_of(_event(iam), IAM, UNTAGGED) == tenant


@pytest.mark.parametrize(
    ("event", "error"),
    [
        (_event(context=False), Unauthenticated),
        (_event(None), Unauthenticated),
        (_event({"accountId": None, "userArn": None}), Unauthenticated),
        (_event({"accountId": ACCOUNT, "userArn": "not-an-arn"}), Unauthenticated),
        (_event({**_arn("assumed-role/tickwork-tenant-acme/x"), "accountId": "999999999999"}), Forbidden),
        (_event(_arn("federated-user/alice")), Forbidden),
        (_event(_arn("assumed-role/tickwork-tenant-/x")), Forbidden),
    ],
    ids=["no request context", "no authorizer", "null identity", "garbage arn", "inconsistent", "federated", "empty"],
)
def test_iam_refusals(event, error):
    with pytest.raises(error):
        tenant_of(event, IAM, UNTAGGED)


def test_local_mode_without_keys_is_tenant_default_whatever_the_identity():
    local = ApiSettings.from_env({"API_AUTH_MODE": "local", "API_KEYS_FILE": ""})
    assert local.api_keys_file is None  # empty means unset
    assert tenant_of(_event(None), local, UNTAGGED) == "default"
    assert tenant_of(_event(_arn("assumed-role/tickwork-tenant-acme/a")), local, UNTAGGED) == "default"


def test_local_mode_with_keys_reads_the_header_in_any_case(tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"k-acme": "acme"}))
    local = ApiSettings.from_env({"API_AUTH_MODE": "local", "API_KEYS_FILE": str(keys)})
    assert tenant_of(_event(headers={"X-Api-Key": "k-acme"}), local, UNTAGGED) == "acme"
    assert tenant_of(_event(headers={"x-api-key": "k-acme"}), local, UNTAGGED) == "acme"
    with pytest.raises(Unauthenticated, match="X-Api-Key"):
        tenant_of(_event(), local, UNTAGGED)
    with pytest.raises(Unauthenticated, match="unknown API key"):
        tenant_of(_event(headers={"x-api-key": "nope"}), local, UNTAGGED)


def test_an_unknown_auth_mode_is_refused_when_the_settings_are_read():
    with pytest.raises(ValidationError, match="API_AUTH_MODE"):
        ApiSettings.from_env({"API_AUTH_MODE": "open"})


def test_telemetry_names_come_from_the_powertools_variables_with_defaults():
    assert TelemetryNames.from_env({}) == TelemetryNames.from_env(
        {"POWERTOOLS_SERVICE_NAME": "tickwork", "POWERTOOLS_METRICS_NAMESPACE": "Tickwork"}
    )
    named = TelemetryNames.from_env({"POWERTOOLS_SERVICE_NAME": "svc", "POWERTOOLS_METRICS_NAMESPACE": "Ns"})
    assert (named.service, named.namespace) == ("svc", "Ns")


SSO_ACME = "AWSReservedSSO_tickwork-tenant-acme_0a1b2c3d4e5f6789"


@pytest.mark.parametrize(
    ("resource", "tenant", "admin"),
    [
        (f"assumed-role/{SSO_ACME}/alice@example.com", "acme", False),
        ("assumed-role/AWSReservedSSO_tickwork-admin_00112233aabbccdd/ops@example.com", None, True),
        # Not Identity Center's shape (its suffix is 16 hex digits): the role's own name counts.
        ("assumed-role/AWSReservedSSO_tickwork-tenant-acme_xyz/alice", None, False),
        ("assumed-role/AWSReservedSSO_ReadOnly_0a1b2c3d4e5f6789/alice", None, False),
    ],
)
def test_an_identity_center_role_counts_by_its_permission_set_s_name(resource, tenant, admin):
    caller = caller_of(_event(_arn(resource)), IAM, UNTAGGED)
    role = resource.split("/")[1]
    assert caller.tenant == (tenant or f"{ACCOUNT}:role/{role}")
    assert caller.admin is admin


def test_an_identity_center_role_of_another_account_is_never_the_named_tenant():
    caller = caller_of(_event(_arn(f"assumed-role/{SSO_ACME}/alice", "210987654321")), IAM, UNTAGGED)
    assert caller == Caller(f"210987654321:role/{SSO_ACME}", admin=False)


def test_each_stack_names_its_own_tenant_roles_and_admin():
    staging = ApiSettings.from_env({"TENANT_ROLE_PREFIX": "tw-staging-", "ADMIN_ROLE_NAME": "tw-staging-admin"})
    assert caller_of(_event(_arn("assumed-role/tw-staging-acme/ci")), staging, UNTAGGED) == Caller("acme")
    assert caller_of(_event(_arn("assumed-role/tw-staging-admin/ops")), staging, UNTAGGED).admin
    # The defaults' names are strangers to this stack: production's admin is not staging's.
    assert caller_of(_event(_arn("assumed-role/tickwork-admin/ops")), staging, UNTAGGED) == Caller(
        f"{ACCOUNT}:role/tickwork-admin"
    )
    assert caller_of(_event(_arn("assumed-role/tickwork-tenant-acme/ci")), staging, UNTAGGED).tenant == (
        f"{ACCOUNT}:role/tickwork-tenant-acme"
    )


@pytest.mark.parametrize(
    "env",
    [
        {"TENANT_ROLE_PREFIX": ""},
        {"ADMIN_ROLE_NAME": "has space"},
        {"ADMIN_ROLE_NAME": "x" * 65},
        {"TENANT_ROLE_PREFIX": "équipe-"},  # a letter, but not ASCII: IAM refuses it in a role's name
        {"ADMIN_ROLE_NAME": "admin٣"},  # a digit, but Arabic-Indic
    ],
)
def test_role_names_iam_cannot_hold_are_refused_at_start(env):
    with pytest.raises(ValidationError):
        ApiSettings.from_env(env)
