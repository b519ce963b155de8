"""API Gateway's JWT authorizer, played locally (an HTTP API route with `AuthorizationType: JWT`, as the stack's
TokenApi has; docs/security.md, "Sign-in with tokens (JWT)").

What it checks, as API Gateway documents it: the `Authorization` header holds a token (`Bearer ` before it or not);
the token is a JWS signed with RS256 by a key of the issuer's JWKS (found through its
/.well-known/openid-configuration, and read again once when a token names a key it has not seen); its `iss` is the
issuer; its `aud`, or failing that its `client_id`, is one of the audiences; `exp` is in the future and `nbf`, if
any, is not. A request it admits reaches the function with `requestContext.authorizer.jwt` = {claims, scopes},
each claim as a string, a list one as `[a b]` (tickwork.control.callers reads them so); one it refuses gets API
Gateway's own 401, `{"message": "Unauthorized"}` with a `WWW-Authenticate` header saying why.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

DISCOVERY_PATH = "/.well-known/openid-configuration"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _int_of(text: str) -> int:
    return int.from_bytes(b64url_decode(text), "big")


def public_key_of(jwk: Mapping[str, Any]) -> rsa.RSAPublicKey:
    """The RSA public key a JWK (kty RSA) describes."""
    return rsa.RSAPublicNumbers(_int_of(jwk["e"]), _int_of(jwk["n"])).public_key()


def jwk_of(key: rsa.RSAPublicKey, kid: str) -> dict[str, str]:
    """A public key as a JWKS entry (RS256, for signatures)."""
    numbers = key.public_numbers()

    def encoded(value: int) -> str:
        return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))

    return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": encoded(numbers.n), "e": encoded(numbers.e)}


def sign_rs256(claims: Mapping[str, Any], key: rsa.RSAPrivateKey, kid: str) -> str:
    """A compact JWS of the claims, signed with RS256."""
    header = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": kid}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(dict(claims), separators=(",", ":")).encode())
    signature = key.sign(f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{payload}.{b64url(signature)}"


class TokenRefused(Exception):
    """Why a token is not admitted (said in the 401's WWW-Authenticate, as API Gateway says it)."""


def verified_claims(token: str, keys: Mapping[str, rsa.RSAPublicKey]) -> dict[str, Any]:
    """The claims of an RS256 JWS whose signature verifies with the key its header names; TokenRefused otherwise."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenRefused("the token is not a JWS (three parts)")
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        signature = b64url_decode(parts[2])
    except ValueError:
        raise TokenRefused("the token is malformed") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenRefused("the token is malformed")
    if header.get("alg") != "RS256":
        raise TokenRefused(f"signing algorithm {str(header.get('alg'))[:20]!r} is not supported")
    key = keys.get(str(header.get("kid")))
    if key is None:
        raise TokenRefused("the token's signing key is not in the issuer's JWKS")
    try:
        key.verify(signature, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise TokenRefused("the token's signature is invalid") from None
    return claims


def _fetch_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - the issuer the template names
        return json.loads(response.read())


def claim_as_string(value: Any) -> str:
    """A claim as API Gateway hands it to the function: a list as `[a b]`, anything else as its text."""
    if isinstance(value, list):
        return "[" + " ".join(str(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict) else str(value)


@dataclass
class JwtAuthorizer:
    """One route's JWT authorizer: the issuer and the audiences of the template's JwtConfiguration."""

    issuer: str
    audiences: tuple[str, ...]
    fetch_json: Callable[[str], Any] = _fetch_json
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self._keys: dict[str, rsa.RSAPublicKey] = {}
        self._lock = threading.Lock()

    def _load_keys(self) -> None:
        discovery = self.fetch_json(self.issuer.rstrip("/") + DISCOVERY_PATH)
        jwks = self.fetch_json(discovery["jwks_uri"])
        self._keys = {key["kid"]: public_key_of(key) for key in jwks.get("keys", []) if key.get("kty") == "RSA"}

    def _claims(self, token: str) -> dict[str, Any]:
        with self._lock:
            if not self._keys:
                self._load_keys()
            try:
                return verified_claims(token, self._keys)
            except TokenRefused as exc:
                if "JWKS" not in str(exc):
                    raise
                self._load_keys()  # the issuer may have rotated its keys
                return verified_claims(token, self._keys)

    def authorize(self, authorization: str | None) -> dict[str, Any]:
        """The `requestContext.authorizer` of a request with this Authorization header; TokenRefused otherwise."""
        token = (authorization or "").strip()
        if token[:7].lower() == "bearer ":
            token = token[7:].strip()
        if not token:
            raise TokenRefused("no token: send Authorization: Bearer <JWT>")
        claims = self._claims(token)
        if claims.get("iss") != self.issuer:
            raise TokenRefused("the token's issuer is not the one this API accepts")
        audiences = claims.get("aud", claims.get("client_id"))
        named = audiences if isinstance(audiences, list) else [audiences]
        if not any(isinstance(a, str) and a in self.audiences for a in named):
            raise TokenRefused("the token's audience is not one this API accepts")
        now = self.clock()
        if not isinstance(claims.get("exp"), int | float) or claims["exp"] <= now:
            raise TokenRefused("the token has expired")
        if isinstance(claims.get("nbf"), int | float) and claims["nbf"] > now:
            raise TokenRefused("the token is not valid yet")
        scope = claims.get("scope")
        scopes = scope.split() if isinstance(scope, str) and scope else None
        return {"jwt": {"claims": {name: claim_as_string(v) for name, v in claims.items()}, "scopes": scopes}}

    @staticmethod
    def refusal(reason: TokenRefused) -> tuple[int, list[tuple[str, str]], bytes]:
        """API Gateway's 401 for a refused token."""
        described = str(reason).replace('"', "'")
        challenge = f'Bearer scope="" error="invalid_token" error_description="{described}"'
        return (
            401,
            [("Content-Type", "application/json"), ("WWW-Authenticate", challenge)],
            b'{"message":"Unauthorized"}',
        )
