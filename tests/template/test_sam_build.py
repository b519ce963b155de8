"""What `sam build` made of template.yaml (`make sam`, part of `make test`): the built template deploys the same
resources, each function's code and the layer's lock, for the template's architecture and Python."""

from __future__ import annotations

import os

import pytest
from tickwork_local.stack.template import load_template

from tests.locks import LAYER_LOCK, ROOT, installed_in, pins

BUILT = ROOT / ".aws-sam" / "build"


def _fresh() -> bool:
    built = BUILT / "template.yaml"
    return built.is_file() and built.stat().st_mtime >= (ROOT / "template.yaml").stat().st_mtime


pytestmark = pytest.mark.skipif(
    not _fresh() and not os.environ.get("TICKWORK_SAM_BUILT"),
    reason="no sam build of this template here: `make sam` builds it (make test does, and then it never skips)",
)


@pytest.fixture(scope="module")
def built() -> dict:
    return load_template(BUILT / "template.yaml")


def test_the_built_template_deploys_the_same_resources(built: dict) -> None:
    source = load_template(ROOT / "template.yaml")
    assert built["Resources"].keys() == source["Resources"].keys()
    assert built["Parameters"] == source["Parameters"]
    for logical_id, resource in source["Resources"].items():
        props = {k: v for k, v in resource.get("Properties", {}).items() if k not in ("CodeUri", "ContentUri")}
        built_props = built["Resources"][logical_id].get("Properties", {})
        assert {k: v for k, v in built_props.items() if k not in ("CodeUri", "ContentUri")} == props, logical_id


def test_each_function_is_built_from_its_code(built: dict) -> None:
    functions = {k: r for k, r in built["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
    source = load_template(ROOT / "template.yaml")
    assert set(functions) == {k for k, r in source["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
    assert len(functions) == 6  # api, tick, dispatch, executor, the job sandbox and the resource provider
    for logical_id, resource in functions.items():
        code = BUILT / resource["Properties"]["CodeUri"]
        original = ROOT / source["Resources"][logical_id]["Properties"]["CodeUri"]
        assert (code / "app.py").read_bytes() == (original / "app.py").read_bytes(), logical_id


def test_the_layer_holds_the_locked_versions_built_for_arm64_and_python_313(built: dict) -> None:
    layer = BUILT / built["Resources"]["SharedLayer"]["Properties"]["ContentUri"] / "python"
    installed = installed_in(layer)
    lambda_python = {"python_version": "3.13", "python_full_version": "3.13.0", "sys_platform": "linux"}
    lambda_python |= {"platform_machine": "aarch64", "platform_python_implementation": "CPython"}
    lambda_python |= {"implementation_name": "cpython"}
    assert installed == pins(LAYER_LOCK, lambda_python)
    compiled = [p.name for p in layer.glob("pydantic_core/*.so")]
    assert compiled == [n for n in compiled if n.endswith("cpython-313-aarch64-linux-gnu.so")]
    assert compiled
    assert (layer / "tickwork" / "services.py").is_file()
