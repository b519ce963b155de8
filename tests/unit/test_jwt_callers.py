"""The token mode's claim mapping (tickwork.control.callers, docs/security.md "Sign-in with tokens (JWT)"): which
tenant a verified token's claims name, and whether it is the admin's."""

from __future__ import annotations

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from pydantic import ValidationError
from tickwork.control.callers import Caller, attribution_of, caller_of, claim_values
from tickwork.model.audit import ActorKind
from tickwork.model.errors import Forbidden, Unauthenticated
from tickwork.settings import ApiSettings

from tests.role_tags import UNTAGGED

ISSUER = "https://idp.example.com/oauth2/default"
TOKENS = ApiSettings.from_env({"JWT_ISSUER": ISSUER})


def _event(claims: dict, iam: dict | None = None) -> APIGatewayProxyEventV2:
    authorizer: dict = {"jwt": {"claims": {"sub": "u-1", **claims}, "scopes": None}}
    if iam is not None:
        authorizer = {"iam": iam}
    return APIGatewayProxyEventV2(
        {
            "rawPath": "/v1/jobs",
            "headers": {},
            "requestContext": {"accountId": "123456789012", "authorizer": authorizer},
        }
    )


@pytest.mark.parametrize(
    ("groups", "caller"),
    [
        (["tickwork-tenant-acme", "Everyone"], Caller("acme")),
        ("[developers tickwork-tenant-acme]", Caller("acme")),  # API Gateway's form of a list claim
        ("tickwork-tenant-acme developers", Caller("acme")),
        ("developers,tickwork-tenant-acme", Caller("acme")),
        ("tickwork-tenant-acme", Caller("acme")),
        (["tickwork-tenant-acme", "tickwork-tenant-acme"], Caller("acme")),
        (["tickwork-admin"], Caller("jwt:tickwork-admin", admin=True)),
        ("[tickwork-admin]", Caller("jwt:tickwork-admin", admin=True)),
        # Both: the tenant's, as the admin.
        (["tickwork-tenant-acme", "tickwork-admin"], Caller("acme", admin=True)),
    ],
)
def test_the_groups_claim_names_the_tenant_and_the_admin_as_a_list_or_a_string(groups, caller):
    assert caller_of(_event({"groups": groups}), TOKENS, UNTAGGED) == caller


@pytest.mark.parametrize(
    "groups",
    [
        None,
        [],
        "",
        ["Everyone", "developers"],
        # Look-alikes of the prefix and of the admin group: none is a tenant's or the admin's.
        ["tickwork-tenant"],
        ["tickwork-tenant-"],
        ["tickwork-tenantacme"],
        ["xtickwork-tenant-acme"],
        ["Tickwork-Tenant-acme"],
        ["tickwork-tenant-a:b"],
        ["tickwork-tenant-123456789012:role/deployer"],
        ["tickwork-admins", "Tickwork-Admin", "tickwork-admin-x"],
        "tickwork-admin-x",
        {"tickwork-tenant-acme": True},
    ],
)
def test_a_token_naming_no_tenant_and_not_the_admin_s_is_refused(groups):
    with pytest.raises(Forbidden, match=r"names no tenant: its 'groups' claim has no value tickwork-tenant-<name>"):
        caller_of(_event({"groups": groups}), TOKENS, UNTAGGED)


@pytest.mark.parametrize(
    "groups", [["tickwork-tenant-acme", "tickwork-tenant-globex"], "[tickwork-tenant-globex tickwork-tenant-acme]"]
)
def test_a_token_naming_two_tenants_is_refused_naming_them(groups):
    with pytest.raises(Forbidden, match=r"names 2 tenants in its 'groups' claim \(acme, globex\)"):
        caller_of(_event({"groups": groups}), TOKENS, UNTAGGED)


def test_the_claim_the_prefix_and_the_admin_group_are_the_stack_s():
    cognito = ApiSettings.from_env(
        {
            "JWT_ISSUER": ISSUER,
            "JWT_TENANT_CLAIM": "cognito:groups",
            "JWT_TENANT_PREFIX": "tw-staging-",
            "JWT_ADMIN_GROUP": "tw-staging-admin",
        }
    )
    assert caller_of(_event({"cognito:groups": "[tw-staging-acme]"}), cognito, UNTAGGED) == Caller("acme")
    assert caller_of(_event({"cognito:groups": ["tw-staging-admin"]}), cognito, UNTAGGED).admin
    # The defaults' names, and another claim, are nobody here.
    for claims in ({"cognito:groups": ["tickwork-tenant-acme", "tickwork-admin"]}, {"groups": ["tw-staging-acme"]}):
        with pytest.raises(Forbidden):
            caller_of(_event(claims), cognito, UNTAGGED)
    # GitHub Actions: each repository of one organisation its own tenant; no token is the admin's.
    github = ApiSettings.from_env(
        {
            "JWT_ISSUER": ISSUER,
            "JWT_TENANT_CLAIM": "repository",
            "JWT_TENANT_PREFIX": "octo-org/",
            "JWT_ADMIN_GROUP": "",
        }
    )
    assert caller_of(_event({"repository": "octo-org/nightly"}), github, UNTAGGED) == Caller("nightly")
    for repository in ("evil-org/nightly", "octo-org/nightly/x"):
        with pytest.raises(Forbidden, match=r"has no value octo-org/<name>$"):
            caller_of(_event({"repository": repository}), github, UNTAGGED)


def test_an_empty_prefix_names_a_tenant_by_every_value_but_the_admin_group():
    named = ApiSettings.from_env({"JWT_ISSUER": ISSUER, "JWT_TENANT_CLAIM": "tickwork_tenant", "JWT_TENANT_PREFIX": ""})
    assert caller_of(_event({"tickwork_tenant": "acme"}), named, UNTAGGED) == Caller("acme")
    assert caller_of(_event({"tickwork_tenant": "acme tickwork-admin"}), named, UNTAGGED) == Caller("acme", admin=True)


def test_without_an_issuer_no_token_is_accepted_and_without_a_subject_none_is():
    with pytest.raises(Unauthenticated, match="accepts no tokens"):
        caller_of(_event({"groups": ["tickwork-tenant-acme"]}), ApiSettings.from_env({}), UNTAGGED)
    with pytest.raises(Unauthenticated, match="no subject"):
        caller_of(_event({"sub": "", "groups": ["tickwork-tenant-acme"]}), TOKENS, UNTAGGED)


def test_a_sigv4_caller_of_a_stack_with_tokens_is_read_from_its_iam_identity():
    iam = {"accountId": "123456789012", "userArn": "arn:aws:sts::123456789012:assumed-role/tickwork-tenant-acme/a"}
    assert caller_of(_event({}, iam=iam), TOKENS, UNTAGGED) == Caller("acme")
    assert attribution_of(_event({}, iam=iam), TOKENS, UNTAGGED).actor.kind is ActorKind.IAM


@pytest.mark.parametrize(
    ("claims", "display"),
    [
        ({"preferred_username": "alice@corp.example", "email": "a@example.com"}, "alice@corp.example"),
        ({"username": "0b1c-uuid", "email": "alice@example.com"}, "alice@example.com"),
        ({"username": "alice", "cognito:username": "x"}, "alice"),
        ({"cognito:username": "alice"}, "alice"),
        ({"email": "alice@example.com", "name": "Alice"}, "alice@example.com"),
        ({"name": "Alice"}, "Alice"),
        ({}, "u-1"),
    ],
)
def test_the_actor_of_a_token_is_its_subject_shown_by_its_user_name(claims, display):
    actor = attribution_of(_event({"groups": "tickwork-tenant-acme", **claims}), TOKENS, UNTAGGED).actor
    assert (actor.kind, actor.id, actor.display) == (ActorKind.JWT, "u-1", display)


def test_claim_values_of_each_shape():
    assert claim_values(["a", "", 3, "b"]) == ["a", "b"]
    assert claim_values("[a b]") == ["a", "b"]
    assert claim_values(" a, b  c ") == ["a", "b", "c"]
    assert claim_values(None) == claim_values(7) == claim_values("[]") == []


@pytest.mark.parametrize(
    "env",
    [
        {"JWT_TENANT_PREFIX": "has space-"},
        {"JWT_TENANT_PREFIX": "a,b-"},
        {"JWT_ADMIN_GROUP": "admins, ops"},
        {"JWT_ADMIN_GROUP": "x" * 101},
        {"JWT_TENANT_CLAIM": ""},
        {"JWT_TENANT_CLAIM": "my groups"},
    ],
)
def test_token_settings_a_claim_cannot_match_are_refused_at_start(env):
    with pytest.raises(ValidationError):
        ApiSettings.from_env(env)
