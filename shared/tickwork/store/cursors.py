"""Opaque page cursors, bound to the tenant and the listing they were given for.

A cursor carries only the position inside the partition (a sort-key value); the partition itself is always
derived from the authenticated tenant (and a job the tenant owns), never from the cursor, so a cursor can only
ever position a query inside the caller's own data. It is MACed (HMAC-SHA256) over the tenant, the listing and
the position, so a cursor handed to another tenant, another listing, or edited by hand is rejected naming
`cursor`, instead of being silently reinterpreted.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re

from tickwork.model.errors import InvalidInput

_SORT = re.compile(r"^[0-9A-Za-z.#]{1,96}$")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def cursor_key(table_name: str, configured: str | None = None) -> bytes:
    """The MAC key: the configured secret (Settings.cursor_secret, CURSOR_SECRET) when set, else one derived
    from the table name.

    Isolation never depends on this key staying secret (the partition comes from the tenant, see the module
    docstring); the MAC turns foreign or edited cursors into a clean 422.
    """
    if configured:
        return configured.encode()
    return hashlib.sha256(f"tickwork-cursor:{table_name}".encode()).digest()


class Cursors:
    """Opaque page cursors: `<base64url position>.<base64url MAC>`, bound to tenant and listing."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, tenant: str, scope: str, position: bytes) -> bytes:
        message = b"\x00".join((b"tickwork-cursor-v1", tenant.encode(), scope.encode(), position))
        return hmac.new(self._secret, message, hashlib.sha256).digest()[:16]

    def encode(self, tenant: str, scope: str, sort_value: str) -> str:
        position = json.dumps({"v": 1, "k": sort_value}, separators=(",", ":")).encode()
        return f"{_b64(position)}.{_b64(self._mac(tenant, scope, position))}"

    def decode(self, tenant: str, scope: str, cursor: str) -> str:
        """The position a cursor names, or InvalidInput('cursor') if it is not one this tenant was given here."""
        bad = InvalidInput.one("cursor", "not a cursor from this listing; start again without one")
        try:
            body, mac = cursor.split(".", 1)
            position = _unb64(body)
            given = _unb64(mac)
        except (ValueError, TypeError):
            raise bad from None
        if not hmac.compare_digest(given, self._mac(tenant, scope, position)):
            raise bad
        try:
            data = json.loads(position)
        except ValueError:  # pragma: no cover - the MAC matched, so we wrote it
            raise bad from None
        value = data.get("k") if isinstance(data, dict) else None
        if data.get("v") != 1 or not isinstance(value, str) or not _SORT.match(value):  # pragma: no cover
            raise bad
        return value
