"""Audit records (docs/security.md "Audit trail"): one item per change, written in the change's own transaction
(`Table`'s `audit=`), in the jobs table.

- pk=AUDIT#<tenant>, sk=<at, ms, 13 digits>#<record id>: a tenant's records in time order, read by one Query;
- tenant_key=AUDIT#*, tenant_sort=<at ms>#<record id> (tenant-index): every tenant's, for an admin;
- `record`: the record as JSON (its before/after values exactly as the API showed them), stored without its absent
  values (a create's every `before`) and compressed with a preset dictionary (`stored_record`): a create's record,
  about 1.9 KB as the API shows it, then takes an item of about 550 B, and its transaction bills 2 WRU instead of 4 (an item written before is
  read as it was, JSON text); `action`, `actor_id`, `actor_display` and `resource_id` beside it for the Query's
  filters;
- due_shard=AUDIT, due_at=<at ms> (due-index): the archive's outbox. A record is written with no TTL; the tick
  archives it to S3 (tickwork.tick.audit_archive), then `AuditOutbox.archived` takes it out of the due index and
  sets `expires_at` (DynamoDB TTL: `at` plus AuditRetentionDays) in one conditional write: a record is only ever
  removed once archived. Its own partition of the due index, which the claim's shard queries never read: a
  backlog of records (S3 unreachable for a day) never crowds out a job's claim.

An action that writes nothing to the table (the dead letters' redrive, tickwork.model.redrive_intents) writes its
record first as an intent (`AuditIntents`): the record's item, at sk=INTENT#<at ms>#<id> (outside the listing's
range of sort keys) without the tenant-index keys (outside an admin's), in its own partition of the due index,
due_shard=AUDIT_INTENT, due_at=<when the tick may settle it>. Settled, it leaves the due index, says how
(`settled`: confirmed or not_happened) and is removed by TTL a day later (the roles delete no item); confirmed, in
one transaction with the record's put, as any audited change.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.audit import AuditRecord
from tickwork.model.clock import to_ms
from tickwork.store.codec import expression_values, serialize
from tickwork.store.conditional import Table
from tickwork.store.due_index import DUE_INDEX, TENANT_INDEX

AUDIT_PARTITION = "AUDIT#"
ALL_TENANTS = "AUDIT#*"  # the tenant-index partition of every tenant's records
ARCHIVE_SHARD = "AUDIT"  # the due-index partition of the records not yet archived
INTENT_SHARD = "AUDIT_INTENT"  # the due-index partition of the intents not yet settled
INTENT_SORT = "INTENT#"  # an intent's sort key's prefix: after every record's (digits) in the partition


def audit_sort(at_ms: int, record_id: str = "") -> str:
    return f"{at_ms:013d}#{record_id}"


class AuditItems:
    """Builds a record's item; the write that it goes with puts it (the change's transaction)."""

    def item(self, record: AuditRecord) -> dict[str, Any]:
        at = to_ms(record.at)
        sort = audit_sort(at, record.id)
        return serialize(
            {
                "pk": AUDIT_PARTITION + record.tenant,
                "sk": sort,
                "kind": "AUDIT",
                "tenant": record.tenant,
                "tenant_key": ALL_TENANTS,
                "tenant_sort": sort,
                "action": record.action,
                "actor_id": record.actor.id,
                "actor_display": record.actor.display,
                "resource_id": record.resource.id,
                "record": stored_record(record),
                "due_shard": ARCHIVE_SHARD,
                "due_at": at,
            }
        )

    def intent(self, record: AuditRecord, settles_at: datetime) -> dict[str, Any]:
        """The item of a record still pending: its record's item, moved out of the listings and the archive."""
        item = self.item(record)
        del item["tenant_key"], item["tenant_sort"]
        return item | serialize(
            {
                "sk": INTENT_SORT + item["sk"]["S"],
                "kind": "AUDIT_INTENT",
                "due_shard": INTENT_SHARD,
                "due_at": to_ms(settles_at),
            }
        )


def due_items(table: Table, shard: str, now: datetime, limit: int) -> list[dict[str, Any]]:
    """The items of a due-index partition due by `now`, up to `limit`, read from the table (the index does not
    project them); one taken out of the index meanwhile is left out."""
    page = table.client.query(
        TableName=table.name,
        IndexName=DUE_INDEX,
        KeyConditionExpression="due_shard = :s AND due_at <= :now",
        ExpressionAttributeValues=expression_values(s=shard, now=to_ms(now)),
        Limit=limit,
    )
    keys = [{"pk": raw["pk"], "sk": raw["sk"]} for raw in page.get("Items", [])]
    return [i for i in table.batch_get(keys) if i.get("due_shard") == shard]


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {"pk": {"S": item["pk"]}, "sk": {"S": item["sk"]}}


@dataclass(frozen=True)
class PendingRecord:
    """A record not yet archived: its item's key, its due time (the archive's condition) and its JSON."""

    key: dict[str, Any]
    due_at: int
    record: str


class AuditOutbox:
    """The records waiting for their archive, and their release to TTL once archived. Cost per record: its due-index
    entry (written with the record, deleted with the mark), a read of its item (BatchGetItem, 100 a request: the
    index does not project the record) and one UpdateItem."""

    def __init__(self, table: Table, *, retention: timedelta) -> None:
        self._table = table
        self.retention = retention

    def pending(self, now: datetime, *, limit: int) -> list[PendingRecord]:
        """Up to `limit` records due by `now`, oldest first."""
        items = due_items(self._table, ARCHIVE_SHARD, now, limit)
        pending = [PendingRecord(_key(i), int(i["due_at"]), record_of(i).model_dump_json()) for i in items]
        return sorted(pending, key=lambda p: (p.due_at, p.key["sk"]["S"]))

    def archived(self, pending: PendingRecord) -> bool:
        """The record is in the archive: out of the due index, and removed by TTL `retention` after its time. False
        if another tick did it first."""
        expires_at = (pending.due_at + int(self.retention.total_seconds() * 1000)) // 1000
        return self._table.update_if(
            pending.key,
            "REMOVE due_shard, due_at SET expires_at = :expires",
            "due_at = :due",
            None,
            expression_values(expires=expires_at, due=pending.due_at),
        )


@dataclass(frozen=True)
class PendingIntent:
    """An intent written and not yet settled: its item's key, its due time (the settle's condition) and its
    record."""

    key: dict[str, Any]
    due_at: int
    record: AuditRecord


class IntentIdTaken(Exception):
    """An intent's put found an item at its key: its record's id (random) was taken."""


# A settled intent stays this long (an operator may look at it in the table), then TTL removes it.
SETTLED_INTENT_KEPT_SECONDS = 86_400


class AuditIntents:
    """The records of actions outside the table, pending until their action is known to have happened. Each
    write is conditional: the intent's put on its key being new, its settle (confirm or not) on its being pending
    still (its due time as written)."""

    def __init__(self, table: Table, items: AuditItems) -> None:
        self._table = table
        self._items = items

    def write(self, record: AuditRecord, *, settles_at: datetime) -> PendingIntent:
        """The record, pending until confirmed or removed; the tick settles it from `settles_at` on."""
        item = self._items.intent(record, settles_at)
        won, _ = self._table.put_if_absent(item, return_old=False)
        if not won:
            raise IntentIdTaken(record.id)
        return PendingIntent({"pk": item["pk"], "sk": item["sk"]}, to_ms(settles_at), record)

    def confirm(self, intent: PendingIntent, record: AuditRecord) -> bool:
        """Its action happened: the intent settled and `record` put, one transaction. False if it was settled
        already."""
        return self._settle(intent, "confirmed", audit=self._items.item(record))

    def mark_not_happened(self, intent: PendingIntent) -> bool:
        """Its action did not happen: the intent settled, no record. False if it was settled already."""
        return self._settle(intent, "not_happened", audit=None)

    def settle(self, intent: PendingIntent, record: AuditRecord | None) -> bool:
        """Confirmed with `record`, or marked not happened when there is none (nothing of it happened)."""
        return self.mark_not_happened(intent) if record is None else self.confirm(intent, record)

    def _settle(self, intent: PendingIntent, outcome: str, *, audit: dict[str, Any] | None) -> bool:
        expires_at = intent.due_at // 1000 + SETTLED_INTENT_KEPT_SECONDS
        values = expression_values(due=intent.due_at, outcome=outcome, expires=expires_at)
        update = "REMOVE due_shard, due_at SET #settled = :outcome, expires_at = :expires"
        names = {"#settled": "settled"}
        return self._table.update_if(intent.key, update, "due_at = :due", names, values, audit=audit)

    def due(self, now: datetime, *, limit: int) -> list[PendingIntent]:
        """Up to `limit` intents the tick may settle by `now`, oldest first."""
        items = due_items(self._table, INTENT_SHARD, now, limit)
        intents = [PendingIntent(_key(i), int(i["due_at"]), record_of(i)) for i in items]
        return sorted(intents, key=lambda p: (p.due_at, p.key["sk"]["S"]))


# zlib's preset dictionary for the records: what their JSON repeats (names of fields and of changes, usual values),
# a create's last, as zlib finds nearer strings in fewer bits. Never change it: records written with it are read
# with it; another dictionary is another format byte.
RECORD_DICTIONARY_V1 = (
    b'"before":"ACTIVE","after":"PAUSED"},"paused_by":{"after":""},"updated_by":{"before":"","after":""},'
    b'"reason":"","job.pause","job.resume","job.cancel","job.update","job.trigger","run.cancel","run.retry",'
    b'"workflow.trigger","workflow_run","freeze.create","calendar","tenant","dlq","local-key","jwt","system",'
    b'"compensation":{"after":{"order":"reverse","on_error":"halt"}},"steps":{"after":[{"id":"a","type":"echo",'
    b'"payload":{"$from":"steps.a.result"},"depends_on":[],"trigger_rule":"all_success","irreversible":false,'
    b'"variants":[]},{"id":"workflow.create","resource":{"kind":"workflow","id":"w01'
    b'{"id":"a01","at":"2026-01-01T00:00:00.000Z","actor":{"kind":"iam","id":"arn:aws:sts::123456789012:'
    b'assumed-role/","display":""},"tenant":"","action":"job.create","resource":{"kind":"job","id":"j01"},'
    b'"request_id":"","source_ip":"","user_agent":"tickwork-cli/","outcome":"succeeded","changes":{'
    b'"calendars":{"after":[]},"catchup":{"after":"LATEST"},"consecutive_failures":{"after":0},'
    b'"created_at":{"after":"2026-01-01T00:00:00.000Z"},"created_by":{"after":""},"id":{"after":"j01"},'
    b'"jitter_seconds":{"after":0},"max_run_seconds":{"after":86400},"misfire_grace_seconds":{"after":900},'
    b'"name":{"after":""},"next_run_at":{"after":"2026-01-01T00:00:00.000Z"},"on_blocked":{"after":"SKIP"},'
    b'"overlap":{"after":"ALLOW"},"payload":{"after":{}},"priority":{"after":5},"retry":{"after":{'
    b'"max_attempts":3,"backoff_seconds":2.0,"max_backoff_seconds":900.0}},"schedule":{"after":{"rate":"",'
    b'"cron":"","at":"2026-01-01T00:00:00.000Z","timezone":"UTC"}},"start_precision":{"after":"second"},'
    b'"state":{"after":"ACTIVE"},"tags":{"after":{}},"tenant":{"after":""},"timeout_seconds":{"after":300},'
    b'"type":{"after":"echo"},"variants":{"after":[]}}}'
)
_FORMAT_V1 = b"\x01"  # then the record compressed with RECORD_DICTIONARY_V1


def stored_record(record: AuditRecord) -> bytes:
    """The record as its item keeps it: its JSON without the values that are absent (None: a create's `before`s, a
    request's missing ids), which the model reads back as absent, compressed with a preset dictionary of what
    records repeat. The same record, in fewer bytes."""
    compressor = zlib.compressobj(9, zdict=RECORD_DICTIONARY_V1)
    text = record.model_dump_json(exclude_none=True).encode()
    return _FORMAT_V1 + compressor.compress(text) + compressor.flush()


def record_of(attrs: dict[str, Any]) -> AuditRecord:
    """The record of an item's attributes: compressed (`stored_record`), or JSON text (an item written before)."""
    stored = attrs["record"]
    if isinstance(stored, str):
        return AuditRecord.model_validate_json(stored)
    raw = bytes(getattr(stored, "value", stored))
    if raw[:1] != _FORMAT_V1:
        raise ValueError(f"an audit record in an unknown format ({raw[:1]!r})")
    decompressor = zlib.decompressobj(zdict=RECORD_DICTIONARY_V1)
    return AuditRecord.model_validate_json(decompressor.decompress(raw[1:]) + decompressor.flush())


class AuditQuery:
    """The Query of one page of audit records at [from_ms, to_ms] (older than `older_than`, a cursor's record),
    newest first: a tenant's partition, filtered by the Query (`conditions`); or, for tenant None, every tenant's
    through tenant-index, which carries none of the filters' attributes, so its records are filtered once read
    (`keep`). `actor` matches the actor's id or its display name."""

    def __init__(
        self,
        table_name: str,
        tenant: str | None,
        *,
        from_ms: int,
        to_ms: int,
        older_than: str | None = None,
        action: str | None = None,
        resource: str | None = None,
        actor: str | None = None,
    ) -> None:
        # Ids are of one length: just below the cursor's record's sort key is every older one.
        high = older_than[:-1] + chr(ord(older_than[-1]) - 1) + "~" if older_than else audit_sort(to_ms, "~")
        values = expression_values(low=audit_sort(from_ms), high=high)
        self.conditions: list[str] = []
        self.names: dict[str, str] = {}
        self.keep: Callable[[AuditRecord], bool] | None = None
        if tenant is None:
            self.params: dict[str, Any] = {"IndexName": TENANT_INDEX, "KeyConditionExpression": "tenant_key = :tk"}
            self.params["KeyConditionExpression"] += " AND tenant_sort BETWEEN :low AND :high"
            values |= expression_values(tk=ALL_TENANTS)
            if (action, resource, actor) != (None, None, None):
                self.keep = lambda record: (
                    action in (None, record.action)
                    and resource in (None, record.resource.id)
                    and (actor is None or actor in (record.actor.id, record.actor.display))
                )
        else:
            self.params = {"KeyConditionExpression": "pk = :tk AND sk BETWEEN :low AND :high"}
            values |= expression_values(tk=AUDIT_PARTITION + tenant)
            for attribute, value in (("action", action), ("resource_id", resource)):
                if value is not None:
                    self._condition(f"#{attribute} = :{attribute}", {f"#{attribute}": attribute})
                    values |= expression_values(**{attribute: value})
            if actor is not None:
                self._condition(
                    "(#actor_id = :actor OR #actor_display = :actor)",
                    {"#actor_id": "actor_id", "#actor_display": "actor_display"},
                )
                values |= expression_values(actor=actor)
        self.params |= {"TableName": table_name, "ExpressionAttributeValues": values, "ScanIndexForward": False}

    def _condition(self, condition: str, names: dict[str, str]) -> None:
        self.conditions.append(condition)
        self.names |= names
