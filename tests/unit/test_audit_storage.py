"""How an audit record is kept in its item (docs/security.md "Audit trail", Storage): without its absent values,
compressed, and read back as the same record; an item written before, its record JSON text, read as it is."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

import pytest
from tickwork.model.audit import SYSTEM, Attribution, AuditResource, Change, audit_record
from tickwork.store.audit import RECORD_DICTIONARY_V1, record_of, stored_record
from tickwork.store.codec import deserialize, serialize

RECORD = audit_record(
    Attribution(actor=SYSTEM),  # no request id, source IP or user agent: absent
    tenant="acme",
    action="job.create",
    resource=AuditResource(kind="job", id="j1"),
    at=datetime(2026, 11, 21, 12, tzinfo=UTC),
    changes={
        "name": Change(after="nightly"),
        "payload": Change(after={"kept": None, "list": [1, None]}),  # nulls inside a value are the value's
    },
)


def test_a_record_reads_back_from_its_item_as_it_was_written() -> None:
    item = deserialize(serialize({"record": stored_record(RECORD)}))
    assert record_of(item) == RECORD
    assert record_of(item).model_dump_json() == RECORD.model_dump_json()


def test_its_item_keeps_no_absent_value_and_fewer_bytes() -> None:
    stored = stored_record(RECORD)
    decompressor = zlib.decompressobj(zdict=RECORD_DICTIONARY_V1)
    kept = (decompressor.decompress(stored[1:]) + decompressor.flush()).decode()
    assert '"before"' not in kept
    assert '"request_id"' not in kept
    assert '"kept":null' in kept
    assert len(stored_record(RECORD)) < len(RECORD.model_dump_json())


def test_an_item_written_before_with_its_record_as_json_text_is_read_as_it_is() -> None:
    assert record_of({"record": RECORD.model_dump_json()}) == RECORD


def test_a_record_in_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        record_of({"record": b"\x02" + stored_record(RECORD)[1:]})
