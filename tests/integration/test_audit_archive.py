"""The audit trail's archive (docs/security.md "Audit trail"): the tick puts each audit record in the audit bucket,
as the API shows it, and only then lets DynamoDB TTL remove it from the table. A crash between the two archives
it again to the same key; an archive that fails leaves it unexpired, for the next tick; the claim goes on."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from tickwork.aws.audit_archive import AuditArchive, archive_key
from tickwork.faults import CrashPoint
from tickwork.model.audit import Actor, ActorKind, Attribution, AuditRecord, AuditResource, audit_record
from tickwork.model.clock import to_ms
from tickwork.store.audit import record_of
from tickwork.store.codec import deserialize
from tickwork.tick.audit_archive import ARCHIVE_THREADS
from tickwork_local.aws.provision import provision
from tickwork_local.stack.template import REPO_ROOT, load_template

from tests.faults.crashes import ProcessKilled
from tests.harness import START, TENANT, Pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ALICE = Attribution(
    actor=Actor(
        kind=ActorKind.IAM, id="arn:aws:sts::123456789012:assumed-role/tickwork-tenant-acme/alice", display="alice"
    ),
    request_id="req-1",
)
RETENTION = timedelta(days=365)  # AuditRetentionDays' default


def _paused_by_alice(pipeline: Any) -> AuditRecord:
    """A job paused through the service with an attribution: one audit record, written with the change."""
    job = pipeline.create_job(schedule={"rate": "1 day"})
    pipeline.services.jobs.pause(TENANT, job.id, by=ALICE)
    (item,) = _audit_items(pipeline)
    return record_of(deserialize(item))


def _audit_items(pipeline: Any) -> list[dict[str, Any]]:
    pages = pipeline.services.store.shared_table.client.get_paginator("scan").paginate(
        TableName=pipeline.resources.table_name,
        FilterExpression="begins_with(pk, :audit)",
        ExpressionAttributeValues={":audit": {"S": "AUDIT#"}},
    )
    return [item for page in pages for item in page["Items"]]


def _bucket(pipeline: Any) -> str:
    return pipeline.services.settings.audit_bucket


def _archived(pipeline: Any) -> dict[str, str]:
    """Every object of the audit bucket: its key and its body."""
    listed = pipeline.s3.list_objects_v2(Bucket=_bucket(pipeline)).get("Contents", [])
    return {
        o["Key"]: pipeline.s3.get_object(Bucket=_bucket(pipeline), Key=o["Key"])["Body"].read().decode() for o in listed
    }


def _versions(pipeline: Any) -> int:
    return len(pipeline.s3.list_object_versions(Bucket=_bucket(pipeline)).get("Versions", []))


def _tick_after(pipeline: Any, seconds: int = 60) -> None:
    pipeline.clock.advance(seconds)
    pipeline.tick()


class _RefusingS3:
    """The audit archive's S3 client, refusing every PutObject (as S3 does when unavailable)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.refused = 0
        self._lock = threading.Lock()

    def put_object(self, **_: Any) -> Any:
        with self._lock:
            self.refused += 1
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, "PutObject")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _refuse_archives(pipeline: Any) -> _RefusingS3:
    archive = pipeline.services.audit_archiver.archive
    refusing = _RefusingS3(archive._s3)
    archive._s3 = refusing
    return refusing


def _allow_archives(pipeline: Any, refusing: _RefusingS3) -> None:
    pipeline.services.audit_archiver.archive._s3 = refusing.real


def test_an_audit_record_is_archived_by_the_tick_as_the_api_shows_it(pipeline):
    record = _paused_by_alice(pipeline)
    assert _archived(pipeline) == {}
    _tick_after(pipeline)
    day = record.at.strftime("%Y-%m-%d")
    key = f"audit/day={day}/{to_ms(record.at):013d}-{record.id}.json"
    assert _archived(pipeline) == {key: record.model_dump_json()}
    assert AuditRecord.model_validate_json(_archived(pipeline)[key]) == record


def test_an_audit_record_has_no_ttl_until_it_is_archived_then_the_retention_from_its_time(pipeline):
    record = _paused_by_alice(pipeline)
    (item,) = _audit_items(pipeline)
    assert "expires_at" not in item  # written with the change: TTL cannot remove what is not archived
    assert item["due_shard"] == {"S": "AUDIT"}
    _tick_after(pipeline)
    (item,) = _audit_items(pipeline)
    assert int(item["expires_at"]["N"]) == int((record.at + RETENTION).timestamp())
    assert "due_shard" not in item
    assert "due_at" not in item
    assert len(_archived(pipeline)) == 1


def test_a_crash_between_the_archive_and_its_release_archives_the_same_object_again(pipeline):
    record = _paused_by_alice(pipeline)
    pipeline.crashes.arm(CrashPoint.AUDIT_AFTER_ARCHIVE)
    pipeline.clock.advance(60)
    with pytest.raises(ProcessKilled):
        pipeline.tick()
    pipeline.crashes.disarm()
    (item,) = _audit_items(pipeline)
    assert "expires_at" not in item
    assert "due_at" in item
    (body,) = _archived(pipeline).values()

    pipeline.calls.clear()
    _tick_after(pipeline)
    assert pipeline.calls.count("PutObject") == 1  # archived again, to the same key: found there (412)
    assert list(_archived(pipeline).values()) == [body] == [record.model_dump_json()]
    assert _versions(pipeline) == 1  # written once: the versioned bucket keeps no second copy
    (item,) = _audit_items(pipeline)
    assert "expires_at" in item
    assert "due_at" not in item


def test_an_archive_that_fails_leaves_the_record_unexpired_and_the_next_tick_archives_it(pipeline):
    record = _paused_by_alice(pipeline)
    refusing = _refuse_archives(pipeline)
    _tick_after(pipeline)
    assert refusing.refused == 1
    (item,) = _audit_items(pipeline)
    assert "expires_at" not in item
    assert item["due_at"] == {"N": str(to_ms(record.at))}
    _tick_after(pipeline)
    assert refusing.refused == 2  # tried again at the next tick
    _allow_archives(pipeline, refusing)
    _tick_after(pipeline)
    assert list(_archived(pipeline).values()) == [record.model_dump_json()]
    (item,) = _audit_items(pipeline)
    assert "expires_at" in item


def test_a_tick_s_archive_pass_ends_after_a_round_with_a_refusal(pipeline):
    records = ARCHIVE_THREADS + 3
    for _ in range(records):
        job = pipeline.create_job(schedule={"rate": "1 day"})
        pipeline.services.jobs.pause(TENANT, job.id, by=ALICE)
    refusing = _refuse_archives(pipeline)
    _tick_after(pipeline)
    assert refusing.refused == ARCHIVE_THREADS  # S3 unreachable: after one round, the rest wait for the next tick
    _allow_archives(pipeline, refusing)
    _tick_after(pipeline)
    assert len(_archived(pipeline)) == records


def test_the_claim_of_due_jobs_is_unaffected_by_audit_records_waiting_for_their_archive(pipeline):
    paused = pipeline.create_job(schedule={"rate": "1 day"})
    pipeline.services.jobs.pause(TENANT, paused.id, by=ALICE)
    due = pipeline.create_job(schedule={"at": START + timedelta(minutes=3)})
    refusing = _refuse_archives(pipeline)
    pipeline.clock.advance(3 * 60)
    report = pipeline.tick()
    assert report["dispatched"] == 1  # the due job's run, claimed and sent
    assert refusing.refused == 1
    assert pipeline.runs_of(due.id)[0].job_id == due.id
    assert "expires_at" not in _audit_items(pipeline)[0]


def test_with_object_lock_each_archived_record_is_locked_for_the_days_the_stack_says(mocked_aws):
    """AuditObjectLockDays above 0: the bucket is made with Object Lock and a default retention, and the archive's
    write (with the checksum such a bucket requires) is locked: its one version cannot be deleted."""
    session = boto3.session.Session()
    s3 = session.client("s3")
    provision(
        load_template(),
        dynamodb=session.client("dynamodb"),
        sqs=session.client("sqs"),
        s3=s3,
        prefix="locked",
        parameters={"AuditObjectLockDays": "30", "AuditObjectLockMode": "COMPLIANCE"},
    )
    bucket = "locked-auditbucket"
    lock = s3.get_object_lock_configuration(Bucket=bucket)["ObjectLockConfiguration"]
    retention = lock["Rule"]["DefaultRetention"]
    assert (retention["Mode"], retention["Days"]) == ("COMPLIANCE", 30)
    record = audit_record(
        ALICE, tenant=TENANT, action="job.pause", resource=AuditResource(kind="job", id="j1"), at=START
    )
    archive = AuditArchive(s3, bucket)
    key = archive.put_once(record.model_dump_json())
    assert archive.put_once(record.model_dump_json()) == key  # a repeat finds it there
    (version,) = s3.list_object_versions(Bucket=bucket)["Versions"]
    assert s3.head_object(Bucket=bucket, Key=key)["ObjectLockMode"] == "COMPLIANCE"
    with pytest.raises(ClientError):
        s3.delete_object(Bucket=bucket, Key=key, VersionId=version["VersionId"])


def test_the_athena_table_in_the_docs_reads_the_record_s_fields_where_the_archive_writes_them():
    text = (REPO_ROOT / "docs/security.md").read_text(encoding="utf-8")
    ddl = text.split("CREATE EXTERNAL TABLE tickwork_audit (\n", 1)[1].split("\n)\n", 1)[0]
    columns = [line.strip().split(" ", 1)[0] for line in ddl.splitlines()]
    assert columns == list(AuditRecord.model_fields)
    record = audit_record(
        ALICE, tenant=TENANT, action="job.pause", resource=AuditResource(kind="job", id="j1"), at=START
    )
    location = "s3://<AuditBucketName>/" + archive_key(record).rsplit("/", 1)[0] + "/"
    assert f"'storage.location.template' = '{location.replace(START.strftime('%Y-%m-%d'), '${day}')}'" in text


def test_fanned_out_the_worker_whose_slice_holds_shard_0_archives_the_records_once(mocked_aws):
    with Pipeline.create(DISPATCH_WORKERS="3") as fanned_out:
        record = _paused_by_alice(fanned_out)
        fanned_out.clock.advance(60)
        assert fanned_out.tick()["slices_sent"] == 3
        assert _archived(fanned_out) == {}  # the coordinator hands out its shards, nothing else
        assert fanned_out.dispatch_all() == 3
        assert list(_archived(fanned_out).values()) == [record.model_dump_json()]
        assert fanned_out.calls.count("PutObject") == 1  # by one worker of the three
        (item,) = _audit_items(fanned_out)
        assert "expires_at" in item
