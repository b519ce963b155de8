"""docs/deploy.md's team stack (a team's own SAM template declaring its Tickwork calendar and job): it translates with
SAM, its ServiceToken is the export the Tickwork stack makes, and its custom resources, created as CloudFormation
creates them (in dependency order, each request's properties resolved), are made by the provider on moto."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from resource_provider import app as provider_app
from template_support import translate
from test_cfn_lint import CFN_LINT
from tickwork_local.runtime.lambda_runtime import LocalLambdaContext
from tickwork_local.stack.template import REPO_ROOT, loads_template

from tests.http_upstream import PresignedPuts, serving

MARKER = "<!-- team stack example: translated with SAM and its resources created through the provider"
PAGES = ("deploy.md", "jobs-as-code.md")
ACCOUNT = "123456789012"


def _examples(page: str) -> list[dict[str, Any]]:
    """The page's marked templates: the ```yaml block after each marker."""
    text = (REPO_ROOT / "docs" / page).read_text(encoding="utf-8")
    blocks = re.findall(re.escape(MARKER) + r"[^\n]*\n```yaml\n(.*?)```", text, re.S)
    assert blocks, f"no marked example in docs/{page}"
    return [loads_template(block) for block in blocks]


def test_the_team_stack_translates_and_imports_the_export_the_tickwork_stack_makes(template, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    (team,) = _examples("deploy.md")
    translated = translate(team)
    customs = {k: r for k, r in translated["Resources"].items() if r["Type"].startswith("Custom::Tickwork")}
    assert {r["Type"] for r in customs.values()} == {"Custom::TickworkCalendar", "Custom::TickworkJob"}
    export = template["Outputs"]["ResourceProviderServiceToken"]["Export"]["Name"]["Fn::Sub"]
    for resource in customs.values():
        imported = resource["Properties"]["ServiceToken"]["Fn::ImportValue"]["Fn::Sub"]
        # The same name once each side's stack name is put in: the team's parameter, the Tickwork stack's own.
        assert imported.replace("${TickworkStack}", "tickwork") == export.replace("${AWS::StackName}", "tickwork")


def _resolved(value: Any, made: dict[str, dict[str, Any]], team: dict[str, Any]) -> Any:
    """A property as CloudFormation hands it to the provider: intrinsics resolved, every scalar a string."""
    if isinstance(value, dict) and len(value) == 1:
        ((name, arg),) = value.items()
        if name == "Ref":
            return made[arg]["PhysicalResourceId"]
        if name == "Fn::GetAtt":
            function = team["Resources"][arg[0]]["Properties"]["FunctionName"]
            return f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{function}"
        if name == "Fn::ImportValue":
            return f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:tickwork-ResourceProviderFunction"
    if isinstance(value, dict):
        return {k: _resolved(v, made, team) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, made, team) for v in value]
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.fixture
def provider(pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("RESOURCE_PROVIDER_TENANTS", "orders")
    monkeypatch.setenv("RESOURCE_PROVIDER_LOOPBACK_URLS", "true")
    provider_app.response_urls.cache_clear()
    provider_app.use_services(pipeline.services)
    yield pipeline
    provider_app.use_services(None)
    provider_app.response_urls.cache_clear()


def test_the_team_stack_passes_cfn_lint(tmp_path):
    text = (REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    (block,) = re.findall(re.escape(MARKER) + r"[^\n]*\n```yaml\n(.*?)```", text, re.S)
    path = tmp_path / "team.yaml"
    path.write_text(block, encoding="utf-8")
    lint = [sys.executable, "-c", CFN_LINT, "--include-checks", "I", "--format", "parseable", "--", str(path)]
    done = subprocess.run(lint, capture_output=True, text=True, timeout=300, check=False)
    assert (done.returncode, done.stdout) == (0, "")


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_resources_are_made_as_cloudformation_creates_them(provider, page):
    made: dict[str, dict[str, Any]] = {}
    PresignedPuts.answers = []
    with serving(PresignedPuts) as url:
        for team in _examples(page):
            # A resource another refers to (!Ref) first, as CloudFormation orders them: calendars before the rest.
            customs = [k for k, r in team["Resources"].items() if r["Type"].startswith("Custom::Tickwork")]
            for logical_id in sorted(customs, key=lambda k: team["Resources"][k]["Type"] != "Custom::TickworkCalendar"):
                made[logical_id] = _create(url, team, logical_id, made)
    tenant = "orders"
    if page == "deploy.md":
        job = provider.services.queries.get_job(tenant, made["NightlyExport"]["PhysicalResourceId"])
        assert (job.type, job.calendars, job.retry.max_attempts, job.timeout_seconds) == (
            "lambda",
            [made["Holidays"]["PhysicalResourceId"]],
            5,
            60,
        )
        assert job.payload["function_arn"].endswith(":function:tickwork-job-orders-export")
        assert made["NightlyExport"]["Data"]["NextRunAt"].endswith("Z")
    else:
        workflow = provider.services.workflows.get(tenant, made["OrdersEtl"]["PhysicalResourceId"])
        assert (workflow.priority, [s.id for s in workflow.steps], workflow.steps[1].retry.max_attempts) == (
            3,
            ["extract", "load"],
            4,
        )


def _create(url: str, team: dict[str, Any], logical_id: str, made: dict[str, dict[str, Any]]) -> dict[str, Any]:
    resource = team["Resources"][logical_id]
    event = {
        "RequestType": "Create",
        "ResponseURL": f"{url}/{logical_id}",
        "StackId": f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/orders/0a1b",
        "RequestId": f"create-{logical_id}",
        "LogicalResourceId": logical_id,
        "ResourceType": resource["Type"],
        "ResourceProperties": _resolved(resource["Properties"], made, team),
    }
    provider_app.handler(event, LocalLambdaContext("ResourceProviderFunction"))
    answer = PresignedPuts.answers[-1]
    assert answer["Status"] == "SUCCESS", answer.get("Reason")
    return answer
