"""What a loopback server that acts for its user (`tickwork console`, `tickwork dev`'s API) accepts from a
browser: requests for a host it listens on, and changes only from its own pages.

A web page cannot send a request with a forged `Host`, so a foreign one means a name that resolves to the
loopback address, which is DNS rebinding: that page would then read the answers as its own origin. The
accepted names are the loopback ones, the address the server listens on, and the ones its user adds (as
`kubectl proxy --accept-hosts` does). A page on another origin may still send a "simple" request (a POST
without a body, or with a form's content type) that needs no CORS preflight: it cannot read the answer, but
the change is made. So a request that is not GET, HEAD or OPTIONS is refused when the browser says it comes
from elsewhere (`Sec-Fetch-Site`, or failing that `Origin`). A client that is not a browser (the CLI, curl)
sends neither header and is not affected.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from email.message import Message
from http import HTTPStatus
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_ADDRESSES = ("", "0.0.0.0", "::")  # noqa: S104 - names no host a request could ask for
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Sec-Fetch-Site values of a request from the server's own pages, or one the user made (typed, bookmarked).
OWN_FETCH_SITES = frozenset({"same-origin", "none"})


@dataclass(frozen=True)
class Refusal:
    title: str
    detail: str

    def response(self) -> tuple[int, list[tuple[str, str]], bytes]:
        """A 403 with an RFC 9457 problem, so the console shows it as it shows the API's own."""
        status = HTTPStatus.FORBIDDEN.value
        problem = {"type": "about:blank", "status": status, "title": self.title, "detail": self.detail}
        return status, [("Content-Type", "application/problem+json")], json.dumps(problem).encode()


def accepted_hosts(listen_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a server listening on `listen_host` answers: the loopback names, that address (unless it
    is a wildcard, which names no host), and `extra`."""
    names = {*LOOPBACK_NAMES, *(_bare(name) for name in extra)}
    if listen_host not in WILDCARD_ADDRESSES:
        names.add(_bare(listen_host))
    return frozenset(names)


def refusal_of(method: str, headers: Message, accepted: frozenset[str]) -> Refusal | None:
    """`refusal` of a request as http.server reads it."""
    return refusal(method, headers.get("Host"), headers.get("Origin"), headers.get("Sec-Fetch-Site"), accepted)


def refusal(
    method: str, host: str | None, origin: str | None, fetch_site: str | None, accepted: frozenset[str]
) -> Refusal | None:
    """Why the request is refused (a 403), or None: the `Host` header must name an accepted host, and a
    request that changes state must not come from another site."""
    name = _host_name(host)
    if name is None or name not in accepted:
        return Refusal(
            "Host not accepted",
            f"this server answers only for {', '.join(sorted(accepted))}, not for Host {host!r}: a page on "
            "another name that resolves here (DNS rebinding) must not act as you. Open it by one of those names, "
            "or add the name with --accept-host.",
        )
    if method.upper() in SAFE_METHODS:
        return None
    if fetch_site is not None:
        if fetch_site.strip().lower() in OWN_FETCH_SITES:
            return None
        return _cross_site(method, f"Sec-Fetch-Site: {fetch_site}")
    if origin is not None and not _same_origin(origin, host or ""):
        return _cross_site(method, f"Origin: {origin}")
    return None


def _cross_site(method: str, evidence: str) -> Refusal:
    return Refusal(
        "Cross-site request refused",
        f"a {method.upper()} from another site ({evidence}) would change state as you; only this server's own "
        "pages, or a client that is not a browser, may do that.",
    )


def _host_name(host: str | None) -> str | None:
    """The name of a `Host` header (`name[:port]`, `[v6][:port]`), lowercased; None if it is not one."""
    if not host:
        return None
    try:
        parts = urlsplit("//" + host.strip())
        parts.port  # noqa: B018 - raises on a port that is not one
    except ValueError:
        return None
    if parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    return parts.hostname or None


def _bare(name: str) -> str:
    return name.strip().strip("[]").lower()


def _same_origin(origin: str, host: str) -> bool:
    """The `Origin` names this server as the request reached it: http, and the `Host` it was sent to."""
    parts = urlsplit(origin.strip())
    return parts.scheme == "http" and parts.netloc.lower() == host.strip().lower() and not parts.path.strip("/")
