"""The audit trail's archive in S3 (docs/security.md "Audit trail"): each record as one JSON object, its body the
record exactly as the API shows it, under a Hive-style key Athena's partition projection reads by day:
`audit/day=<YYYY-MM-DD>/<at, ms, 13 digits>-<record id>.json`.

Written once (If-None-Match: *): an archive repeated after a crash finds its object there (412) and is done, so a
record has one object and, in a versioned or object-locked bucket, one version.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from tickwork.aws.results import already_written
from tickwork.model.audit import AuditRecord
from tickwork.model.clock import to_ms

ARCHIVE_PREFIX = "audit/"


def archive_key(record: AuditRecord) -> str:
    return f"{ARCHIVE_PREFIX}day={record.at.strftime('%Y-%m-%d')}/{to_ms(record.at):013d}-{record.id}.json"


class AuditArchive:
    """Takes its client; builds none."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self.bucket = bucket

    def put_once(self, record_json: str) -> str:
        """The record in the archive; its key. A record archived before is left as it is (the same body)."""
        key = archive_key(AuditRecord.model_validate_json(record_json))
        try:
            self._s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=record_json.encode(),
                ContentType="application/json",
                IfNoneMatch="*",
                # A bucket with a default object lock retention takes no PutObject without an integrity checksum.
                ChecksumAlgorithm="SHA256",
            )
        except ClientError as exc:
            if not already_written(exc):
                raise
        return key
