"""tickwork dev's local IdP (tickwork_local.identity.idp) and the JWT authorizer the local API plays
(tickwork_local.identity.jwt_authorizer): the code flow's PKCE check, and tokens that verify against the issuer's JWKS."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from tickwork_local.identity.idp import (
    AuthorizationError,
    LocalIdp,
    LocalIssuer,
    default_users,
    parse_user,
    s256,
)
from tickwork_local.identity.jwt_authorizer import (
    JwtAuthorizer,
    TokenRefused,
    b64url,
    b64url_decode,
    public_key_of,
    verified_claims,
)
from tickwork_local.runtime.apigateway import ApiGatewayServer

ISSUER = "http://127.0.0.1:9999"
CONSOLE = "http://127.0.0.1:3000/console/"
VERIFIER = "v" * 43 + "-verifier_of.the~console"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def issuer(clock: Clock) -> LocalIssuer:
    return LocalIssuer(ISSUER, default_users(), redirect_uris={CONSOLE}, clock=clock)


def authorize(issuer: LocalIssuer, user: str = "alice", challenge: str | None = None) -> str:
    query = {
        "response_type": "code",
        "client_id": issuer.client_id,
        "redirect_uri": CONSOLE,
        "scope": "openid profile",
        "state": "s-1",
        "nonce": "n-1",
        "code_challenge": challenge or s256(VERIFIER),
        "code_challenge_method": "S256",
    }
    issuer.check_client(query)
    back = issuer.approve(issuer.begin(query), user)
    assert back.startswith(CONSOLE + "?")
    assert "state=s-1" in back
    return back.split("code=", 1)[1].split("&", 1)[0]


def exchange(issuer: LocalIssuer, code: str, verifier: str = VERIFIER) -> dict:
    return issuer.exchange(
        {
            "grant_type": "authorization_code",
            "code": code,
            "client_id": issuer.client_id,
            "redirect_uri": CONSOLE,
            "code_verifier": verifier,
        }
    )


def authorizer_of(issuer: LocalIssuer, clock: Clock) -> JwtAuthorizer:
    published = {f"{ISSUER}/.well-known/openid-configuration": issuer.discovery(), f"{ISSUER}/jwks": issuer.jwks()}
    return JwtAuthorizer(ISSUER, (issuer.client_id,), fetch_json=published.__getitem__, clock=clock)


def test_a_wrong_code_verifier_is_refused_and_spends_the_code(issuer):
    code = authorize(issuer)
    with pytest.raises(AuthorizationError) as refused:
        exchange(issuer, code, verifier="w" * 43)
    assert refused.value.code == "invalid_grant"
    with pytest.raises(AuthorizationError):  # the code was used: the right verifier comes too late
        exchange(issuer, code)


def test_the_right_verifier_gets_tokens_once(issuer):
    code = authorize(issuer)
    tokens = exchange(issuer, code)
    assert tokens["token_type"] == "Bearer"
    assert tokens["id_token"].count(".") == tokens["access_token"].count(".") == 2
    with pytest.raises(AuthorizationError):
        exchange(issuer, code)


def test_an_expired_code_is_refused(issuer, clock):
    code = authorize(issuer)
    clock.now += 61
    with pytest.raises(AuthorizationError):
        exchange(issuer, code)


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": ""}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"scope": "profile"}, "invalid_scope"),
    ],
)
def test_an_authorization_request_without_pkce_s256_or_the_code_flow_is_refused(issuer, change, error):
    query = {
        "response_type": "code",
        "client_id": issuer.client_id,
        "redirect_uri": CONSOLE,
        "scope": "openid",
        "code_challenge": s256(VERIFIER),
        "code_challenge_method": "S256",
        **change,
    }
    with pytest.raises(AuthorizationError) as refused:
        issuer.begin(query)
    assert refused.value.code == error


@pytest.mark.parametrize("change", [{"client_id": "other"}, {"redirect_uri": "http://evil.example/console/"}])
def test_an_unknown_client_or_redirect_uri_is_refused(issuer, change):
    with pytest.raises(AuthorizationError):
        issuer.check_client({"client_id": issuer.client_id, "redirect_uri": CONSOLE, **change})


def test_the_tokens_verify_against_the_issuers_jwks_and_carry_the_users_groups(issuer):
    tokens = exchange(issuer, authorize(issuer, "ada"))
    keys = {key["kid"]: public_key_of(key) for key in issuer.jwks()["keys"]}
    id_claims = verified_claims(tokens["id_token"], keys)
    access_claims = verified_claims(tokens["access_token"], keys)
    assert (id_claims["iss"], id_claims["aud"], id_claims["nonce"], id_claims["sub"]) == (
        ISSUER,
        issuer.client_id,
        "n-1",
        "ada",
    )
    assert access_claims["groups"] == ["tickwork-tenant-ops", "tickwork-admin"]
    assert access_claims["client_id"] == issuer.client_id


def test_a_token_whose_payload_was_changed_fails_its_signature(issuer):
    token = exchange(issuer, authorize(issuer, "alice"))["access_token"]
    header, payload, signature = token.split(".")
    claims = json.loads(b64url_decode(payload))
    claims["groups"] = ["tickwork-admin"]
    forged = f"{header}.{b64url(json.dumps(claims).encode())}.{signature}"
    keys = {key["kid"]: public_key_of(key) for key in issuer.jwks()["keys"]}
    with pytest.raises(TokenRefused, match="signature"):
        verified_claims(forged, keys)


def test_the_local_authorizer_hands_claims_as_api_gateway_does(issuer, clock):
    token = exchange(issuer, authorize(issuer, "alice"))["access_token"]
    context = authorizer_of(issuer, clock).authorize(f"Bearer {token}")
    claims = context["jwt"]["claims"]
    assert claims["groups"] == "[tickwork-tenant-acme]"
    assert claims["exp"] == str(int(clock.now) + issuer.token_seconds)
    assert context["jwt"]["scopes"] == ["openid", "profile"]


def test_the_local_authorizer_refuses_an_expired_token_a_missing_one_and_another_audience(issuer, clock):
    token = exchange(issuer, authorize(issuer))["access_token"]
    authorizer = authorizer_of(issuer, clock)
    with pytest.raises(TokenRefused, match="no token"):
        authorizer.authorize(None)
    other = JwtAuthorizer(ISSUER, ("someone-else",), fetch_json=authorizer.fetch_json, clock=clock)
    with pytest.raises(TokenRefused, match="audience"):
        other.authorize(token)
    clock.now += issuer.token_seconds
    with pytest.raises(TokenRefused, match="expired"):
        authorizer.authorize(token)
    status, headers, body = JwtAuthorizer.refusal(TokenRefused("the token has expired"))
    assert (status, json.loads(body)) == (401, {"message": "Unauthorized"})
    assert 'error="invalid_token"' in dict(headers)["WWW-Authenticate"]


def test_idp_users_are_given_as_name_and_groups():
    assert parse_user("carol=tickwork-tenant-acme, tickwork-admin").groups == ("tickwork-tenant-acme", "tickwork-admin")
    with pytest.raises(ValueError, match="NAME=GROUP"):
        parse_user("no groups here")


def test_the_local_gateway_with_the_idp_is_the_token_api_and_leaves_the_console_open():
    """`tickwork dev --idp`'s API: a request without a token is API Gateway's 401, never the function's; one with the
    IdP's token reaches it with the claims; a GET of the console's reaches it with none (the open routes)."""
    seen: list[dict] = []

    def invoke(event: dict) -> dict:
        seen.append(event)
        return {"statusCode": 200, "body": "{}"}

    idp = LocalIdp(default_users())
    idp.start()
    server = ApiGatewayServer(("127.0.0.1", 0), invoke, authorizer=JwtAuthorizer(idp.url, (idp.issuer.client_id,)))
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/v1/jobs", timeout=5)
        assert refused.value.code == 401
        assert not seen
        token = idp.issuer.tokens_for(idp.issuer.user("bob"))["access_token"]
        request = urllib.request.Request(f"{base}/v1/jobs", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200
        assert seen[-1]["requestContext"]["authorizer"]["jwt"]["claims"]["groups"] == "[tickwork-tenant-globex]"
        with urllib.request.urlopen(f"{base}/console/config.json", timeout=5) as response:
            assert response.status == 200
        assert "authorizer" not in seen[-1]["requestContext"]
    finally:
        server.stop()
        idp.stop()
