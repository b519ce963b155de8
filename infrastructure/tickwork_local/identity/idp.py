"""A small OIDC issuer on 127.0.0.1 for `tickwork dev --idp`: the console signs in to it as it signs in to the
stack's issuer deployed (Cognito, Okta, Entra ID), and the local API takes its tokens as TokenApi's JWT authorizer
takes theirs (tickwork_local.identity.jwt_authorizer). docs/local.md, "Sign-in with the local IdP".

What it plays: discovery (/.well-known/openid-configuration), its JWKS (/jwks: one RSA key, made at start), the
authorization endpoint (/authorize: the authorization-code flow with PKCE, S256 only, for its one public client and
that client's redirect URIs, with a login form listing the test users: no passwords), the token endpoint (/token: the
code once, within a minute, for the verifier whose S256 is the challenge; no client secret), and end_session
(/logout). Its ID and access tokens are RS256-signed and carry the `groups` claim (the test user's groups: a tenant's
`<JwtTenantPrefix><name>`, the admin's `<JwtAdminGroup>`), `preferred_username` and `email`. It keeps no session
(each sign-in shows the form), issues no refresh token, and knows no consent, MFA or password.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from cryptography.hazmat.primitives.asymmetric import rsa

from tickwork_local.identity.jwt_authorizer import DISCOVERY_PATH, b64url, jwk_of, sign_rs256

log = logging.getLogger("tickwork_local.identity.idp")

CLIENT_ID = "tickwork-console"
CODE_SECONDS = 60
TOKEN_SECONDS = 3600
# RFC 7636: a verifier is 43 to 128 of these characters.
_VERIFIER = re.compile(r"^[A-Za-z0-9._~-]{43,128}$")
_USER_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True)
class TestUser:
    """A user the login form lists: a name (its subject, preferred_username and e-mail's local part) and groups."""

    __test__ = False  # not a pytest class

    name: str
    groups: tuple[str, ...]


def default_users(tenant_prefix: str = "tickwork-tenant-", admin_group: str = "tickwork-admin") -> list[TestUser]:
    """alice of tenant acme, bob of tenant globex, and ada, the admin, acting for tenant ops."""
    return [
        TestUser("alice", (f"{tenant_prefix}acme",)),
        TestUser("bob", (f"{tenant_prefix}globex",)),
        TestUser("ada", (f"{tenant_prefix}ops", admin_group)),
    ]


def parse_user(text: str) -> TestUser:
    """`NAME=GROUP[,GROUP...]` (tickwork dev --idp-user); ValueError saying what is wrong."""
    name, sep, groups = text.partition("=")
    if not sep or not _USER_NAME.match(name.strip()):
        raise ValueError(f"--idp-user takes NAME=GROUP[,GROUP...] (a name of letters, digits, _.@-), not {text!r}")
    return TestUser(name.strip(), tuple(g.strip() for g in groups.split(",") if g.strip()))


def s256(verifier: str) -> str:
    """A PKCE code challenge of method S256 (RFC 7636)."""
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


class AuthorizationError(Exception):
    """An OAuth error: its code (invalid_request, invalid_grant, ...) and description."""

    def __init__(self, code: str, description: str) -> None:
        super().__init__(description)
        self.code = code


@dataclass
class _Pending:
    """An authorization request, or the code it was answered with."""

    redirect_uri: str
    state: str | None
    nonce: str | None
    challenge: str
    scope: str
    expires: float
    user: TestUser | None = None


@dataclass
class LocalIssuer:
    """The issuer's logic, without HTTP: authorization requests, codes, tokens. `issuer` is its base URL."""

    issuer: str
    users: list[TestUser]
    redirect_uris: set[str] = field(default_factory=set)
    client_id: str = CLIENT_ID
    token_seconds: int = TOKEN_SECONDS
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = secrets.token_hex(8)
        self._requests: dict[str, _Pending] = {}
        self._codes: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------ what it publishes

    def discovery(self) -> dict[str, Any]:
        base = self.issuer.rstrip("/")
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "jwks_uri": f"{base}/jwks",
            "end_session_endpoint": f"{base}/logout",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "profile", "email"],
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nonce", "preferred_username", "email", "groups"],
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [jwk_of(self._key.public_key(), self.kid)]}

    def user(self, name: str) -> TestUser | None:
        return next((user for user in self.users if user.name == name), None)

    # ------------------------------------------------------------ the flow

    def check_client(self, query: dict[str, str]) -> None:
        """The client and its redirect URI, which must be right before anything is sent to that URI."""
        if query.get("client_id") != self.client_id:
            raise AuthorizationError("unauthorized_client", f"unknown client_id (this issuer's is {self.client_id})")
        if query.get("redirect_uri") not in self.redirect_uris:
            raise AuthorizationError("invalid_request", "redirect_uri is not one registered for the client")

    def begin(self, query: dict[str, str]) -> str:
        """An authorization request (check_client passed): its id, for the login form; AuthorizationError."""
        if query.get("response_type") != "code":
            raise AuthorizationError("unsupported_response_type", "only response_type=code (the code flow)")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            raise AuthorizationError(
                "invalid_request", "PKCE is required: code_challenge with code_challenge_method=S256"
            )
        if "openid" not in (query.get("scope") or "").split():
            raise AuthorizationError("invalid_scope", "the scope must include openid")
        request_id = secrets.token_urlsafe(16)
        with self._lock:
            self._requests[request_id] = _Pending(
                redirect_uri=query["redirect_uri"],
                state=query.get("state"),
                nonce=query.get("nonce"),
                challenge=query["code_challenge"],
                scope=query["scope"],
                expires=self.clock() + CODE_SECONDS * 10,
            )
        return request_id

    def approve(self, request_id: str, user_name: str) -> str:
        """The user chose: the URL the browser goes back to, with the code and the state."""
        with self._lock:
            pending = self._requests.pop(request_id, None)
        user = self.user(user_name)
        if pending is None or pending.expires <= self.clock():
            raise AuthorizationError("invalid_request", "this sign-in has expired or was used: start it again")
        if user is None:
            raise AuthorizationError("access_denied", f"no test user {user_name[:64]!r}")
        code = secrets.token_urlsafe(24)
        pending.user, pending.expires = user, self.clock() + CODE_SECONDS
        with self._lock:
            self._codes[code] = pending
        answer = {"code": code, **({"state": pending.state} if pending.state is not None else {})}
        return f"{pending.redirect_uri}{'&' if '?' in pending.redirect_uri else '?'}{urlencode(answer)}"

    def exchange(self, form: dict[str, str]) -> dict[str, Any]:
        """The token endpoint: a code, once, for the client and redirect URI it was given to, and the verifier
        whose S256 is its challenge; the tokens. AuthorizationError otherwise."""
        if form.get("grant_type") != "authorization_code":
            raise AuthorizationError("unsupported_grant_type", "only grant_type=authorization_code")
        with self._lock:
            pending = self._codes.pop(form.get("code") or "", None)  # a code is used once, whatever follows
        if pending is None or pending.expires <= self.clock() or pending.user is None:
            raise AuthorizationError("invalid_grant", "the code is unknown, used or expired")
        if form.get("client_id") != self.client_id or form.get("redirect_uri") != pending.redirect_uri:
            raise AuthorizationError("invalid_grant", "the code was issued to another client or redirect_uri")
        verifier = form.get("code_verifier") or ""
        if not _VERIFIER.match(verifier) or not secrets.compare_digest(s256(verifier), pending.challenge):
            raise AuthorizationError("invalid_grant", "the code_verifier does not match the code_challenge")
        return self.tokens_for(pending.user, nonce=pending.nonce, scope=pending.scope)

    def tokens_for(self, user: TestUser, *, nonce: str | None = None, scope: str = "openid") -> dict[str, Any]:
        """An ID token and an access token of the user, as the token endpoint answers them."""
        now = int(self.clock())
        common = {
            "iss": self.issuer,
            "sub": user.name,
            "iat": now,
            "exp": now + self.token_seconds,
            "groups": list(user.groups),
            "preferred_username": user.name,
            "email": f"{user.name}@example.com",
        }
        id_claims = {**common, "aud": self.client_id, "auth_time": now, **({"nonce": nonce} if nonce else {})}
        access_claims = {
            **common,
            "aud": self.client_id,
            "client_id": self.client_id,
            "scope": scope,
            "jti": secrets.token_hex(8),
        }
        return {
            "token_type": "Bearer",
            "expires_in": self.token_seconds,
            "scope": scope,
            "id_token": sign_rs256(id_claims, self._key, self.kid),
            "access_token": sign_rs256(access_claims, self._key, self.kid),
        }


# ---------------------------------------------------------------------------- over HTTP


def _login_page(issuer: LocalIssuer, request_id: str) -> str:
    buttons = "\n".join(
        f'<li><button type="submit" name="user" value="{html.escape(u.name)}">Sign in as {html.escape(u.name)}'
        f"</button> <small>{html.escape(', '.join(u.groups) or 'no groups')}</small></li>"
        for u in issuer.users
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Local IdP: sign in</title></head>
<body>
<h1>Local IdP: sign in</h1>
<p>tickwork dev's test issuer ({html.escape(issuer.issuer)}): choose a test user. No password: this is not a real IdP.</p>
<form method="post" action="/authorize">
<input type="hidden" name="request" value="{html.escape(request_id)}">
<ul>
{buttons}
</ul>
</form>
</body></html>
"""


class _Handler(BaseHTTPRequestHandler):
    server: LocalIdp
    protocol_version = "HTTP/1.1"
    server_version = "tickwork-local-idp"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str, headers: Iterable[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        # Read by the console's own origin (another port): discovery, the keys and the token endpoint allow CORS.
        self._send(status, json.dumps(data).encode(), "application/json", [("Access-Control-Allow-Origin", "*")])

    def _page(self, status: int, text: str) -> None:
        self._send(status, text.encode(), "text/html; charset=utf-8")

    def _redirect(self, location: str) -> None:
        self._send(302, b"", "text/plain", [("Location", location)])

    def _form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        return dict(parse_qsl(self.rfile.read(min(length, 65536)).decode("utf-8", "replace")))

    def do_OPTIONS(self) -> None:
        self._send(204, b"", "text/plain", [
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Allow-Methods", "GET, POST"),
            ("Access-Control-Allow-Headers", "Content-Type"),
        ])  # fmt: skip

    def do_GET(self) -> None:
        issuer = self.server.issuer
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query))
        if url.path == DISCOVERY_PATH:
            self._json(200, issuer.discovery())
        elif url.path == "/jwks":
            self._json(200, issuer.jwks())
        elif url.path == "/authorize":
            try:
                issuer.check_client(query)
            except AuthorizationError as exc:  # never redirected: the URI is not known to be the client's
                self._page(400, f"<h1>Sign-in refused</h1><p>{html.escape(exc.code)}: {html.escape(str(exc))}</p>")
                return
            try:
                self._page(200, _login_page(issuer, issuer.begin(query)))
            except AuthorizationError as exc:
                answer = {"error": exc.code, "error_description": str(exc)}
                if query.get("state") is not None:
                    answer["state"] = query["state"]
                self._redirect(f"{query['redirect_uri']}?{urlencode(answer)}")
        elif url.path == "/logout":
            back = query.get("post_logout_redirect_uri")
            if back and back in issuer.redirect_uris:
                self._redirect(back)
            else:
                self._page(200, "<h1>Signed out</h1><p>The local IdP keeps no session: nothing more to do.</p>")
        else:
            self._json(404, {"error": "not_found"})

    def do_POST(self) -> None:
        issuer = self.server.issuer
        path = urlsplit(self.path).path
        form = self._form()
        if path == "/authorize":
            try:
                self._redirect(issuer.approve(form.get("request", ""), form.get("user", "")))
            except AuthorizationError as exc:
                self._page(400, f"<h1>Sign-in refused</h1><p>{html.escape(exc.code)}: {html.escape(str(exc))}</p>")
        elif path == "/token":
            try:
                self._json(200, issuer.exchange(form))
            except AuthorizationError as exc:
                self._json(400, {"error": exc.code, "error_description": str(exc)})
        else:
            self._json(404, {"error": "not_found"})


class LocalIdp(ThreadingHTTPServer):
    """The issuer over HTTP on `host:port` (0: any free port); its URL is its issuer identifier."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, users: list[TestUser], host: str = "127.0.0.1", port: int = 0, **issuer: Any) -> None:
        super().__init__((host, port), _Handler)
        self.issuer = LocalIssuer(f"http://{host}:{self.server_address[1]}", users, **issuer)

    @property
    def url(self) -> str:
        return self.issuer.issuer

    def start(self) -> None:
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2}, name="idp", daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
