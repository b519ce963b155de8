"""Page cursors: keyed by Settings.cursor_secret (CURSOR_SECRET) through the wiring, else by the table name."""

from __future__ import annotations

import pytest
from tickwork.model.errors import InvalidInput
from tickwork.services import Services
from tickwork.settings import Settings
from tickwork.store import Cursors, cursor_key

from tests.unit.test_settings_and_models import BASE


def _refused(cursors: Cursors, cursor: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        cursors.decode("acme", "jobs", cursor)
    assert [e.field for e in caught.value.errors] == ["cursor"]


def test_a_configured_secret_keys_the_mac_and_an_unset_or_empty_one_derives_it_from_the_table() -> None:
    assert cursor_key("t-table", "s3cret") == b"s3cret"
    assert cursor_key("t-table", None) == cursor_key("t-table", "")
    assert cursor_key("t-table") != cursor_key("other-table")
    assert cursor_key("t-table") != b"s3cret"


def test_a_cursor_decodes_only_under_the_key_tenant_and_listing_it_was_made_for() -> None:
    cursors = Cursors(cursor_key("t-table", "one"))
    cursor = cursors.encode("acme", "jobs", "0001798000000000#j01")
    assert cursors.decode("acme", "jobs", cursor) == "0001798000000000#j01"
    _refused(Cursors(cursor_key("t-table", "two")), cursor)
    _refused(Cursors(cursor_key("t-table")), cursor)
    with pytest.raises(InvalidInput):
        cursors.decode("globex", "jobs", cursor)
    with pytest.raises(InvalidInput):
        cursors.decode("acme", "dlq", cursor)
    _refused(cursors, "not-a-cursor")


def test_the_wiring_keys_listings_with_the_settings_secret(aws_credentials: None) -> None:
    configured = Services(settings=Settings.from_env({**BASE, "CURSOR_SECRET": "one"}))
    assert configured.settings.cursor_secret == "one"
    cursor = configured.listings.cursors.encode("acme", "jobs", "0001798000000000#j01")
    assert Cursors(b"one").decode("acme", "jobs", cursor) == "0001798000000000#j01"

    derived = Services(settings=Settings.from_env(BASE))
    assert derived.settings.cursor_secret is None
    cursor = derived.listings.cursors.encode("acme", "jobs", "0001798000000000#j01")
    assert Cursors(cursor_key("t-table")).decode("acme", "jobs", cursor) == "0001798000000000#j01"
    _refused(Cursors(b"one"), cursor)
