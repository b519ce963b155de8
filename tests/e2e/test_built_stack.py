"""The stack as deployed: the functions built as `sam build` lays them out (tickwork_local.stack.build), for this
machine, from the layer's lock file, each run in processes of the template's Python whose sys.path holds only
the function's code and the layer (no development venv), fed through the Lambda Runtime API.

The end-to-end test runs `tickwork dev --built`: the local runtime plays API Gateway, EventBridge and the SQS
event source mappings in front of those processes, against its own moto server.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from tickwork_local.runtime.lambda_runtime import function_config
from tickwork_local.runtime.process_runtime import InitError, ProcessFunctionRuntime
from tickwork_local.stack.build import BuiltStack, build

from tests.conftest import load_event
from tests.e2e.conftest import ROOT, Api, Node, invoke_provider, start_node, wait_for
from tests.http_upstream import PresignedPuts, serving
from tests.locks import LAYER_LOCK, installed_in, pins

pytestmark = pytest.mark.e2e

EXAMPLE_LAYER = ROOT / "examples" / "job-types" / "layer"
INVOICE = json.loads((ROOT / "examples" / "job-types" / "invoice.json").read_text())
FUNCTIONS = (
    "ApiFunction",
    "TickFunction",
    "ExecutorFunction",
    "DispatchFunction",
    "JobSandboxFunction",
    "ResourceProviderFunction",
)
BUILT_READY_SECONDS = 120  # every function's first process imports the whole layer; a loaded CI machine is slow


@pytest.fixture(scope="module")
def stack() -> BuiltStack:
    return build(out=ROOT / ".build" / "e2e")


def test_the_layer_holds_exactly_the_locked_versions(stack: BuiltStack) -> None:
    layer = stack.root / "SharedLayer" / "python"
    installed = installed_in(layer)
    runtime = {"python_version": "3.13", "python_full_version": "3.13.0", "sys_platform": "linux"}
    runtime |= {"platform_python_implementation": "CPython", "implementation_name": "cpython"}
    assert installed == pins(LAYER_LOCK, runtime)
    assert (layer / "tickwork" / "__init__.py").is_file()  # SAM puts ContentUri's contents in python/


@pytest.mark.parametrize("function_id", FUNCTIONS)
def test_every_function_imports_from_its_build_alone(stack: BuiltStack, function_id: str) -> None:
    config = function_config(stack.template, function_id, {"DueShards": "2"}, template_dir=stack.root)
    runtime = ProcessFunctionRuntime(
        config,
        layer_paths=stack.layer_paths(function_id),
        python=stack.python,
        environment={"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1"},
        max_environments=1,
    )
    try:
        runtime.warm()  # raises InitError with the import's error (on a layer without aws_xray_sdk, that one)
        assert runtime.environments == 1
    finally:
        runtime.stop()


def test_a_function_that_cannot_import_reports_its_init_error(stack: BuiltStack, tmp_path: Path) -> None:
    code = tmp_path / "broken"
    code.mkdir()
    (code / "app.py").write_text("import not_in_the_layer\n\ndef handler(event, context):\n    return 1\n")
    config = function_config(stack.template, "TickFunction", {"DueShards": "2"}, template_dir=stack.root)
    config = type(config)(**{**config.__dict__, "code_dir": code})
    runtime = ProcessFunctionRuntime(config, layer_paths=[], python=stack.python, environment={}, max_environments=1)
    with pytest.raises(InitError, match="No module named 'not_in_the_layer'"):
        runtime.warm()
    assert runtime.environments == 0


# A function-isolated type (docs/security.md, "Isolation of job code"): it says which function it ran in.
SANDBOXED = """
import os

from pydantic import BaseModel
from tickwork.jobtypes import RunContext, job_type


class Numbers(BaseModel):
    values: list[int]


@job_type("sandboxed_sum", Numbers, isolation="function")
def sandboxed_sum(payload: Numbers, ctx: RunContext) -> dict:
    ctx.checkpoint({"seen": len(payload.values)})
    return {"sum": sum(payload.values), "ran_in": os.environ.get("AWS_LAMBDA_FUNCTION_NAME")}
"""


@pytest.fixture(scope="module")
def built_node(stack: BuiltStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, str]]:
    sandboxed = tmp_path_factory.mktemp("sandboxed-layer")
    (sandboxed / "sandboxed_jobs.py").write_text(SANDBOXED)
    node = start_node(
        "built",
        *("--built", str(stack.root), "--tick-seconds", "2"),
        *("--job-types", "acme_jobs,sandboxed_jobs", "--job-types-path", str(EXAMPLE_LAYER)),  # docs/job-types.md
        *("--job-types-path", str(sandboxed)),
        ready_seconds=BUILT_READY_SECONDS,
    )
    try:
        yield node, node.moto_url
    finally:
        code = node.proc.terminate(30)
        assert code == 0, node.proc.output()


def _finished(api: Api, job_id: str) -> dict[str, object] | None:
    runs = api.runs(job_id)
    return runs[0] if runs and runs[0]["status"] in ("SUCCEEDED", "FAILED") else None


def _in(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_a_job_of_a_users_own_type_runs_in_the_built_functions_from_its_layer(built_node: tuple[Node, str]) -> None:
    node, _ = built_node
    job = node.api.create_job(name="invoice", type="invoice_total", payload=INVOICE, schedule={"at": _in(3)})
    run = wait_for(lambda: _finished(node.api, job["id"]), 90, 0.5, f"the invoice's run\n{node.proc.output()}")
    assert run["status"] == "SUCCEEDED", run
    assert node.api.get(f"/v1/runs/{run['id']}/result")["total"] == "62.40"


def test_a_function_isolated_job_runs_in_the_built_job_sandbox(built_node: tuple[Node, str]) -> None:
    node, _ = built_node
    job = node.api.create_job(
        name="sandboxed", type="sandboxed_sum", payload={"values": [1, 2, 39]}, schedule={"at": _in(3)}
    )
    run = wait_for(lambda: _finished(node.api, job["id"]), 90, 0.5, f"the sandboxed run\n{node.proc.output()}")
    assert run["status"] == "SUCCEEDED", run.get("error")
    assert node.api.get(f"/v1/runs/{run['id']}/result") == {"sum": 42, "ran_in": "tickwork-JobSandboxFunction"}


def test_a_job_runs_end_to_end_through_the_built_functions(built_node: tuple[Node, str]) -> None:
    node, moto_url = built_node
    payload = {"built": True, "tag": uuid.uuid4().hex}
    job = node.api.create_job(name="built-e2e", payload=payload, schedule={"at": _in(4)})
    run = wait_for(lambda: _finished(node.api, job["id"]), 90, 0.5, f"the built run to finish\n{node.proc.output()}")
    assert run["status"] == "SUCCEEDED", run
    assert node.api.get(f"/v1/runs/{run['id']}")["status"] == "SUCCEEDED"
    assert node.api.get(f"/v1/runs/{run['id']}/result") == payload

    s3 = boto3.client(
        "s3", endpoint_url=moto_url, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stored = []
    for bucket in s3.list_buckets()["Buckets"]:
        for item in s3.list_objects_v2(Bucket=bucket["Name"]).get("Contents", []):
            if run["id"] in item["Key"]:
                stored.append(json.loads(s3.get_object(Bucket=bucket["Name"], Key=item["Key"])["Body"].read()))
    assert stored == [payload]  # the result, written once, by the built executor


def test_the_custom_resource_provider_answers_from_its_built_function(built_node: tuple[Node, str]) -> None:
    node, _ = built_node
    PresignedPuts.answers = []
    with serving(PresignedPuts) as url:
        created = invoke_provider(node, {**load_event("cfn-job-create.json"), "ResponseURL": f"{url}/r"})
    assert [a["Status"] for a in PresignedPuts.answers] == ["SUCCESS"]
    assert node.api.get(f"/v1/jobs/{created['PhysicalResourceId']}")["name"] == "nightly-export"
