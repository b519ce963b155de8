"""Who is an admin: the keys file's two entry forms (and its validation), the tickwork-admin role, open mode."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from tickwork.control.callers import Caller, caller_of, parse_api_keys, tenant_of
from tickwork.settings import ApiSettings

from tests.role_tags import UNTAGGED

ACCOUNT = "123456789012"


def _event(user_arn: str | None = None, key: str | None = None, account: str = ACCOUNT) -> APIGatewayProxyEventV2:
    raw: dict = {"rawPath": "/v1/tenants/me", "headers": {"x-api-key": key} if key else {}}
    raw["requestContext"] = {"accountId": ACCOUNT, "http": {"method": "GET"}}
    if user_arn:
        raw["requestContext"]["authorizer"] = {"iam": {"accountId": account, "userArn": user_arn}}
    return APIGatewayProxyEventV2(raw)


def test_both_entry_forms_and_admin_defaults_false():
    callers = parse_api_keys(
        {
            "k1": "acme",
            "k2": {"tenant": "ops", "admin": True},
            "k3": {"tenant": "b"},
            "k4": {"tenant": "c", "admin": False},
        }
    )
    assert callers == {
        "k1": Caller("acme"),
        "k2": Caller("ops", admin=True),
        "k3": Caller("b"),
        "k4": Caller("c"),
    }
    assert parse_api_keys({}) == {}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ([], "must be a JSON object"),
        ("acme", "must be a JSON object"),
        ({"secret-key-1": "bad#name"}, "'bad#name' is not a valid tenant name"),
        ({"secret-key-1": 3}, "must be a tenant name or an object"),
        ({"secret-key-1": {"admin": True}}, "tenant: Field required"),
        ({"secret-key-1": {"tenant": "ops", "admin": "yes"}}, "admin: Input should be a valid boolean"),
        ({"secret-key-1": {"tenant": "ops", "root": True}}, "root: Extra inputs are not permitted"),
        ({"secret-key-1": {"tenant": "a b"}}, "tenant: String should match pattern"),
    ],
)
def test_a_bad_file_says_what_and_where_without_the_whole_key(data, says):
    with pytest.raises(ValueError, match=r"^keys\.json: ") as raised:
        parse_api_keys(data, "keys.json")
    message = str(raised.value)
    assert says in message
    assert "secret-key-1" not in message  # a key is a secret: only its start is shown
    if isinstance(data, dict):
        assert "'secr'" in message


def test_local_mode_reads_admin_keys_from_the_file(tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"k-acme": "acme", "k-ops": {"tenant": "ops", "admin": True}}))
    settings = ApiSettings.from_env({"API_AUTH_MODE": "local", "API_KEYS_FILE": str(keys)})
    assert caller_of(_event(key="k-acme"), settings, UNTAGGED) == Caller("acme", admin=False)
    assert caller_of(_event(key="k-ops"), settings, UNTAGGED) == Caller("ops", admin=True)
    assert tenant_of(_event(key="k-ops"), settings, UNTAGGED) == "ops"


def test_a_keys_file_that_is_not_json_says_so(tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text("{not json")
    settings = ApiSettings.from_env({"API_AUTH_MODE": "local", "API_KEYS_FILE": str(keys)})
    with pytest.raises(ValueError, match="not JSON"):
        caller_of(_event(key="k"), settings, UNTAGGED)


def test_local_open_mode_is_the_default_tenant_and_an_admin():
    settings = ApiSettings.from_env({"API_AUTH_MODE": "local"})
    assert caller_of(_event(), settings, UNTAGGED) == Caller("default", admin=True)


@pytest.mark.parametrize(
    ("arn", "account", "caller"),
    [
        (
            f"arn:aws:sts::{ACCOUNT}:assumed-role/tickwork-admin/ops",
            ACCOUNT,
            Caller(f"{ACCOUNT}:role/tickwork-admin", True),
        ),
        # The same role name in another account administers nothing here.
        (
            "arn:aws:sts::210987654321:assumed-role/tickwork-admin/ops",
            "210987654321",
            Caller("210987654321:role/tickwork-admin"),
        ),
        (f"arn:aws:sts::{ACCOUNT}:assumed-role/tickwork-tenant-acme/a", ACCOUNT, Caller("acme")),
        (
            f"arn:aws:sts::{ACCOUNT}:assumed-role/tickwork-admins/ops",
            ACCOUNT,
            Caller(f"{ACCOUNT}:role/tickwork-admins"),
        ),
        # An IAM user named like the role is not the role.
        (f"arn:aws:iam::{ACCOUNT}:user/tickwork-admin", ACCOUNT, Caller(f"{ACCOUNT}:user/tickwork-admin")),
    ],
)
def test_the_admin_is_the_tickwork_admin_role_of_the_apis_own_account(arn, account, caller):
    assert caller_of(_event(arn, account=account), ApiSettings.from_env({}), UNTAGGED) == caller
