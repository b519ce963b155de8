"""A role's `tickwork:tenant` tag names its caller's tenant through the API, read from (moto's) IAM once per role
per cache period; a bad tag is a 403 and IAM failing a 503, and neither reads or writes anything else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from tickwork.aws.role_tags import CACHE_FOR, READ_TIMEOUT_SECONDS

from tests.api.conftest import ACCOUNT, ACME, GLOBEX, role_identity

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

CI = "github-actions-acme"  # a CI role named by no convention: its tag says whose it is
TRUST = json.dumps({"Version": "2012-10-17", "Statement": []})


def _role(pipeline: Any, name: str, tenant: str | None) -> None:
    tags = [{"Key": "tickwork:tenant", "Value": tenant}] if tenant is not None else []
    _iam(pipeline).create_role(RoleName=name, AssumeRolePolicyDocument=TRUST, Tags=tags)


def _iam(pipeline: Any) -> Any:
    """The IAM client the API reads role tags with (AwsClients caches it by its read timeout)."""
    return pipeline.services.clients.single_attempt_client("iam", read_timeout=READ_TIMEOUT_SECONDS)


def _fail_reads(pipeline: Any, error: Exception) -> None:
    def refuse(**_: Any) -> None:
        raise error

    _iam(pipeline).meta.events.register("before-call.iam.ListRoleTags", refuse)


def _lookups(pipeline: Any) -> list[str]:
    return [params["RoleName"] for params in pipeline.calls.params("ListRoleTags")]


def test_a_role_tagged_with_a_tenant_acts_for_it_beside_the_tenant_s_named_role(api, pipeline):
    _role(pipeline, CI, "acme")
    job = api.create(identity=role_identity(CI, session="run-1"))
    assert job["tenant"] == "acme"
    assert api.get(f"/v1/jobs/{job['id']}", identity=ACME).status == 200  # the role named tickwork-tenant-acme
    assert api.get(f"/v1/jobs/{job['id']}", identity=GLOBEX).status == 404
    listed = api.get("/v1/jobs", identity=role_identity(CI, session="run-2")).json["items"]
    assert [j["id"] for j in listed] == [job["id"]]


def test_a_tagged_role_s_change_is_its_tenant_s_record_naming_the_role_and_session(api, pipeline):
    _role(pipeline, CI, "acme")
    ci = role_identity(CI, session="run-7")
    job = api.create(identity=ci)
    assert job["created_by"] == f"{CI}/run-7"
    (record,) = api.get("/v1/audit", identity=ACME).json["items"]
    assert (record["tenant"], record["resource"]["id"]) == ("acme", job["id"])
    assert record["actor"] == {"kind": "iam", "id": ci["userArn"], "display": f"{CI}/run-7"}


def test_the_tag_wins_over_the_role_name_s_prefix(api, pipeline):
    _role(pipeline, "tickwork-tenant-acme", "globex")
    job = api.create(identity=ACME)
    assert job["tenant"] == "globex"


def test_a_role_s_tags_are_read_once_per_cache_period_and_a_retag_is_seen_after_it(api, pipeline):
    _role(pipeline, CI, "acme")
    pipeline.calls.clear()
    job = api.create(identity=role_identity(CI))
    assert api.get(f"/v1/jobs/{job['id']}", identity=role_identity(CI, session="other")).status == 200
    assert _lookups(pipeline) == [CI]  # one IAM call for both requests (and both dependencies of each)
    _iam(pipeline).untag_role(RoleName=CI, TagKeys=["tickwork:tenant"])
    pipeline.clock.advance(CACHE_FOR.total_seconds() - 1)
    assert api.get(f"/v1/jobs/{job['id']}", identity=role_identity(CI)).status == 200  # still kept
    assert _lookups(pipeline) == [CI]
    pipeline.clock.advance(1)
    # Untagged now: the role counts by its name, a tenant of its own, to which acme's job is unknown.
    reply = api.get("/v1/jobs", identity=role_identity(CI))
    assert reply.status == 200, reply.text
    assert reply.json["items"] == []
    assert _lookups(pipeline) == [CI, CI]
    assert api.create(identity=role_identity(CI))["tenant"] == f"{ACCOUNT}:role/{CI}"


def test_a_role_unknown_to_iam_counts_by_its_name(api, pipeline):
    assert api.create(identity=ACME)["tenant"] == "acme"
    assert _lookups(pipeline) == ["tickwork-tenant-acme"]


@pytest.mark.parametrize("value", ["acme/prod", "", f"{ACCOUNT}:role/other"])
def test_a_tag_that_is_not_a_tenant_name_is_403_naming_it_and_nothing_is_done(api, pipeline, value):
    _role(pipeline, CI, value)
    pipeline.calls.clear()
    reply = api.post(
        "/v1/jobs", {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}}, identity=role_identity(CI)
    )
    assert reply.status == 403, reply.text
    assert reply.json["type"] == "urn:tickwork:problem:forbidden"
    assert f"the role {CI}'s tag tickwork:tenant is {value!r}" in reply.json["detail"]
    assert set(pipeline.calls.by_operation()) == {"ListRoleTags"}


@pytest.mark.parametrize(
    ("error", "code", "retry_after"),
    [
        (
            ClientError({"Error": {"Code": "Throttling"}, "ResponseMetadata": {"HTTPStatusCode": 400}}, "ListRoleTags"),
            "Throttling",
            "5",
        ),
        (
            ClientError(
                {"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}}, "ListRoleTags"
            ),
            "AccessDenied",
            None,
        ),
        (EndpointConnectionError(endpoint_url="https://iam.amazonaws.com"), "EndpointConnectionError", "5"),
    ],
    ids=["throttled", "access denied", "no connection"],
)
def test_iam_failing_is_a_503_never_the_name_s_tenant_and_nothing_is_done(api, pipeline, error, code, retry_after):
    _role(pipeline, "tickwork-tenant-acme", "globex")
    _fail_reads(pipeline, error)
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}}, identity=ACME)
    assert reply.status == 503, reply.text
    assert reply.headers.get("retry-after") == retry_after
    assert reply.json["type"] == "urn:tickwork:problem:identity-unresolved"
    assert f"reading the tags of the role tickwork-tenant-acme from IAM failed ({code})" in reply.json["detail"]
    assert set(pipeline.calls.by_operation()) <= {"ListRoleTags"}
    assert pipeline.count_items(kind="JOB") == 0
