"""S3 data access: run results, written once (first write wins)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from botocore.exceptions import ClientError

from tickwork.models import Run, RunResult


def result_key(run: Run) -> str:
    return result_key_of(run.tenant, run.job_id, run.id)


def result_key_of(tenant: str, job_id: str, run_id: str) -> str:
    """Where a run's result lives: by tenant, then job (or workflow), then run."""
    return f"results/{tenant}/{job_id}/{run_id}.json"


class ResultStore:
    """Takes its client; builds none."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self.bucket = bucket

    def write_once(self, run: Run, document: Any) -> tuple[RunResult, bool]:
        """Write the result with If-None-Match: *. Returns (result, written_now).

        A 412 means an earlier attempt already wrote it (promise 3): that object stands, unchanged.
        """
        body = json.dumps(document, separators=(",", ":"), sort_keys=True, default=str).encode()
        digest = hashlib.sha256(body).hexdigest()
        key = result_key(run)
        try:
            self._s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=body,
                ContentType="application/json",
                IfNoneMatch="*",
                Metadata={"sha256": digest, "run-id": run.id},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("PreconditionFailed", "412"):
                raise
            existing = self.find(run)
            if existing is None:  # pragma: no cover - 412 means it exists
                raise
            return existing, False
        return RunResult(location=f"s3://{self.bucket}/{key}", sha256=digest, bytes=len(body)), True

    def find(self, run: Run) -> RunResult | None:
        """The stored result of a run, if an earlier attempt wrote one."""
        key = result_key(run)
        try:
            head = self._s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return RunResult(
            location=f"s3://{self.bucket}/{key}",
            sha256=head.get("Metadata", {}).get("sha256", ""),
            bytes=int(head["ContentLength"]),
        )

    def read(self, run: Run) -> Any | None:
        return self.read_of(run.tenant, run.job_id, run.id)

    def read_of(self, tenant: str, job_id: str, run_id: str) -> Any | None:
        """A run's result document by its ids (None if there is none), without reading the run first."""
        try:
            obj = self._s3.get_object(Bucket=self.bucket, Key=result_key_of(tenant, job_id, run_id))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return json.loads(obj["Body"].read())
