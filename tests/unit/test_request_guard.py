"""The request guard's decisions (tickwork_console.request_guard): which hosts, and which changes, a loopback
server that acts for its user accepts."""

from __future__ import annotations

import pytest
from tickwork_console.request_guard import accepted_hosts, refusal

LOOPBACK = accepted_hosts("127.0.0.1")


def test_accepted_hosts_are_the_loopback_names_the_listening_address_and_the_added_ones():
    assert {"localhost", "127.0.0.1", "::1"} == LOOPBACK
    assert accepted_hosts("192.168.1.5", ["Box.Local", "[fd00::1]"]) == LOOPBACK | {
        "192.168.1.5",
        "box.local",
        "fd00::1",
    }
    assert accepted_hosts("0.0.0.0") == LOOPBACK  # a wildcard names no host: add names with --accept-host
    assert accepted_hosts("::") == LOOPBACK


@pytest.mark.parametrize(
    "host",
    [
        None,
        "",
        "rebind.attacker.example",
        "localhost.",
        "127.0.0.1.nip.io:3000",
        "127.0.0.1:notaport",
        "a@127.0.0.1",
        "127.0.0.1/x",
        "[::2]:3000",
    ],
)
def test_a_host_not_named_is_refused_for_any_method(host):
    for method in ("GET", "POST"):
        refused = refusal(method, host, None, None, LOOPBACK)
        assert refused is not None, (method, host)
        assert refused.title == "Host not accepted"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:3000", "LOCALHOST:8790", "[::1]:8790", "[::1]"])
def test_a_loopback_host_is_served(host):
    assert refusal("GET", host, None, None, LOOPBACK) is None


@pytest.mark.parametrize(
    ("origin", "fetch_site", "refused"),
    [
        (None, None, False),  # not a browser
        ("http://127.0.0.1:3000", "same-origin", False),
        ("http://127.0.0.1:3000", None, False),
        (None, "none", False),  # the user's own navigation
        ("https://evil.example", "cross-site", True),
        ("http://localhost:3000", "same-site", True),  # another port of the same name is another origin
        ("http://localhost:3000", None, True),
        ("http://127.0.0.1:8000", None, True),
        ("https://127.0.0.1:3000", None, True),
        ("null", None, True),  # a sandboxed frame, a data: URL
        ("https://evil.example", None, True),
    ],
)
def test_a_change_is_refused_when_the_browser_says_it_comes_from_elsewhere(origin, fetch_site, refused):
    for method in ("POST", "PATCH", "PUT", "DELETE", "PROPFIND"):
        answer = refusal(method, "127.0.0.1:3000", origin, fetch_site, LOOPBACK)
        assert (answer is not None) is refused, method
        if answer is not None:
            assert answer.title == "Cross-site request refused"
    for method in ("GET", "HEAD", "OPTIONS"):
        assert refusal(method, "127.0.0.1:3000", origin, fetch_site, LOOPBACK) is None
