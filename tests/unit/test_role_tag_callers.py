"""A role's `tickwork:tenant` tag names its tenant (callers.caller_of, iam mode), and which wins when a role's tag,
its name's prefix and the admin's name all apply: the admin stays the admin, the tag wins over the prefix. No AWS:
the tags are given (tests/role_tags.py); tickwork.aws.role_tags reads and keeps the real ones."""

from __future__ import annotations

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from tickwork.control.callers import Caller, attribution_of, caller_of
from tickwork.model.errors import Forbidden, IdentityUnresolved
from tickwork.settings import ApiSettings

from tests.role_tags import RoleTagsOf

ACCOUNT = "123456789012"
OTHER = "210987654321"
IAM = ApiSettings.from_env({})
SSO_ACME = "AWSReservedSSO_tickwork-tenant-acme_0a1b2c3d4e5f6789"


def _event(resource: str, account: str = ACCOUNT) -> APIGatewayProxyEventV2:
    iam = {"accountId": account, "userArn": f"arn:aws:sts::{account}:{resource}"}
    return APIGatewayProxyEventV2(
        {
            "rawPath": "/v1/jobs",
            "headers": {},
            "requestContext": {"accountId": ACCOUNT, "http": {"method": "GET"}, "authorizer": {"iam": iam}},
        }
    )


@pytest.mark.parametrize(
    ("role", "tags", "caller"),
    [
        ("deploy-bot", {"deploy-bot": "acme"}, Caller("acme")),
        # The tag wins over the name's prefix: an explicit attribute over a naming convention.
        ("tickwork-tenant-acme", {"tickwork-tenant-acme": "globex"}, Caller("globex")),
        # The admin stays the admin; its tag names the tenant it acts for, as a token naming both does.
        ("tickwork-admin", {"tickwork-admin": "ops"}, Caller("ops", admin=True)),
        # No tag: the name counts, as without tags.
        ("tickwork-tenant-acme", {}, Caller("acme")),
        ("deploy-bot", {"other-role": "acme"}, Caller(f"{ACCOUNT}:role/deploy-bot")),
        ("tickwork-admin", {}, Caller(f"{ACCOUNT}:role/tickwork-admin", admin=True)),
    ],
    ids=["tag", "tag over prefix", "admin tagged", "prefix untagged", "untagged", "admin untagged"],
)
def test_a_role_s_tenant_tag_names_its_tenant_and_wins_over_its_name(role, tags, caller):
    role_tags = RoleTagsOf(tags)
    assert caller_of(_event(f"assumed-role/{role}/alice"), IAM, role_tags) == caller
    assert role_tags.asked == [role]


def test_a_ci_role_and_a_tenant_role_tagged_alike_are_one_tenant():
    role_tags = RoleTagsOf({"github-actions-acme": "acme"})
    ci = caller_of(_event("assumed-role/github-actions-acme/run-1"), IAM, role_tags)
    people = caller_of(_event(f"assumed-role/{SSO_ACME}/alice@example.com"), IAM, role_tags)
    assert ci == people == Caller("acme")


def test_each_stack_s_prefix_and_admin_name_give_way_to_the_tag_as_the_defaults_do():
    staging = ApiSettings.from_env({"TENANT_ROLE_PREFIX": "tw-staging-", "ADMIN_ROLE_NAME": "tw-staging-admin"})
    role_tags = RoleTagsOf({"tw-staging-acme": "globex", "tw-staging-admin": "ops", "tickwork-admin": "acme"})
    assert caller_of(_event("assumed-role/tw-staging-acme/ci"), staging, role_tags) == Caller("globex")
    assert caller_of(_event("assumed-role/tw-staging-admin/ci"), staging, role_tags) == Caller("ops", admin=True)
    # Another stack's admin name is no admin here, tagged or not.
    assert caller_of(_event("assumed-role/tickwork-admin/ops"), staging, role_tags) == Caller("acme")


@pytest.mark.parametrize(
    ("resource", "account", "caller"),
    [
        # Identity Center's roles: no one may tag them (a permission set's tags are not its role's).
        (f"assumed-role/{SSO_ACME}/alice@example.com", ACCOUNT, Caller("acme")),
        ("assumed-role/AWSReservedSSO_ReadOnly_0a1b2c3d4e5f6789/bob", ACCOUNT, None),
        # Another account's roles are not this account's to read, nor to name a tenant of this stack.
        ("assumed-role/deploy-bot/ci", OTHER, Caller(f"{OTHER}:role/deploy-bot")),
        ("assumed-role/tickwork-tenant-acme/ci", OTHER, Caller(f"{OTHER}:role/tickwork-tenant-acme")),
        ("user/ops/bob", ACCOUNT, Caller(f"{ACCOUNT}:user/bob")),
    ],
    ids=["identity center", "identity center, no tenant", "other account", "other account's tenant name", "user"],
)
def test_identity_center_roles_other_accounts_roles_and_users_are_not_looked_up(resource, account, caller):
    role_tags = RoleTagsOf(error=AssertionError("no lookup expected"))
    service = "iam" if resource.startswith("user/") else "sts"
    event = _event(resource, account)
    event["requestContext"]["authorizer"]["iam"]["userArn"] = f"arn:aws:{service}::{account}:{resource}"
    expected = caller or Caller(f"{ACCOUNT}:role/{resource.split('/')[1]}")
    assert caller_of(event, IAM, role_tags) == expected
    assert role_tags.asked == []


@pytest.mark.parametrize(
    "value",
    ["", "acme/prod", f"{ACCOUNT}:role/deploy-bot", "has space", "x" * 65, "acmé", "*"],
    ids=["empty", "slash", "principal's tenant", "space", "too long", "not ascii", "star"],
)
def test_a_tag_that_is_not_a_tenant_name_is_refused_naming_the_role_and_the_tag(value):
    role_tags = RoleTagsOf({"tickwork-tenant-acme": value})
    with pytest.raises(Forbidden, match=r"the role tickwork-tenant-acme's tag tickwork:tenant is .* not a tenant name"):
        caller_of(_event("assumed-role/tickwork-tenant-acme/ci"), IAM, role_tags)


def test_a_role_whose_tags_cannot_be_read_is_refused_never_named_by_its_name():
    unreadable = IdentityUnresolved("the caller's tenant could not be resolved", retry_after=5)
    for role in ("tickwork-tenant-acme", "tickwork-admin", "deploy-bot"):
        with pytest.raises(IdentityUnresolved):
            caller_of(_event(f"assumed-role/{role}/ci"), IAM, RoleTagsOf(error=unreadable))
        with pytest.raises(IdentityUnresolved):
            attribution_of(_event(f"assumed-role/{role}/ci"), IAM, RoleTagsOf(error=unreadable))


def test_a_token_s_caller_and_a_local_caller_never_look_a_role_up():
    role_tags = RoleTagsOf(error=AssertionError("no lookup expected"))
    tokens = ApiSettings.from_env({"JWT_ISSUER": "https://idp.example.com"})
    event = _event("assumed-role/deploy-bot/ci")
    event["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": "u1", "groups": "tickwork-tenant-acme"}}}
    assert caller_of(event, tokens, role_tags) == Caller("acme")
    local = ApiSettings.from_env({"API_AUTH_MODE": "local"})
    assert caller_of(_event("assumed-role/deploy-bot/ci"), local, role_tags) == Caller("default", admin=True)
    assert role_tags.asked == []
