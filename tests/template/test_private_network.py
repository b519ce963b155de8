"""Private networks (docs/security.md): with VpcSubnetIds the executor runs in the subnets, and the stack adds the
endpoints of every AWS service it calls; without, the stack is as it always was.

The template is read as CloudFormation deploys it with the parameters given (template_support.evaluate); cfn-lint
and checkov check the same rendering (test_cfn_lint.py, test_checkov.py; tickwork_local.stack.template_renderings).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from moto import mock_aws
from template_support import (
    as_list,
    iam_statements,
    resources_on,
    strip_for_moto,
    translate,
    upload_placeholder_code,
)
from tickwork_local.stack import template_renderings
from tickwork_local.stack.template import REPO_ROOT
from tickwork_local.stack.template_renderings import VPC_PARAMETERS

SECURITY_DOC = REPO_ROOT / "docs" / "security.md"
CLIENT_FACTORY = REPO_ROOT / "shared" / "tickwork" / "aws" / "clients.py"
SUBNETS = VPC_PARAMETERS["VpcSubnetIds"].split(",")
GROUPS = VPC_PARAMETERS["VpcSecurityGroupIds"].split(",")
ROUTE_TABLES = VPC_PARAMETERS["VpcRouteTableIds"].split(",")


def _endpoints(resources: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::EC2::VPCEndpoint"}


def _service_of(endpoint: dict[str, Any]) -> str:
    """The service an endpoint's ServiceName names: com.amazonaws.${AWS::Region}.<service>."""
    match = re.fullmatch(r"com\.amazonaws\.\$\{AWS::Region\}\.([a-z0-9.-]+)", endpoint["ServiceName"])
    assert match, endpoint["ServiceName"]
    return match.group(1)


# ---------------------------------------------------------------- unset: today's stack


def test_without_the_vpc_parameters_nothing_is_in_a_vpc_and_nothing_is_added(template):
    resources = resources_on(template, {})
    assert not [k for k, r in resources.items() if "VpcConfig" in r.get("Properties", {})]
    assert "ManagedPolicyArns" not in resources["ExecutorRole"]["Properties"]
    assert not [k for k, r in resources.items() if r["Type"].startswith("AWS::EC2::")]
    assert "ExecutorVpcAccessPolicy" not in resources


# ---------------------------------------------------------------- set


def _handlers_running_job_code() -> set[str]:
    """The functions whose code reaches the executor or the job sandbox (Services.executor and Services.job_sandbox:
    the two places job handlers run), read from their folders' source."""
    found = set()
    for folder in sorted((REPO_ROOT / "functions").iterdir()):
        for source in folder.rglob("*.py"):
            tree = ast.parse(source.read_text(encoding="utf-8"))
            if any(
                isinstance(node, ast.Attribute) and node.attr in ("executor", "job_sandbox") for node in ast.walk(tree)
            ):
                found.add(folder.name)
    return found


def test_with_them_the_functions_that_run_job_code_run_in_the_subnets(template):
    resources = resources_on(template, VPC_PARAMETERS)
    in_vpc = {k: r["Properties"]["VpcConfig"] for k, r in resources.items() if "VpcConfig" in r.get("Properties", {})}
    assert in_vpc == {
        "ExecutorFunction": {"SubnetIds": SUBNETS, "SecurityGroupIds": GROUPS},
        "JobSandboxFunction": {"SubnetIds": SUBNETS, "SecurityGroupIds": GROUPS},
    }
    # The folders are named after the functions: functions/executor is ExecutorFunction's CodeUri.
    folders = {template["Resources"][k]["Properties"]["CodeUri"].strip("/").split("/")[-1] for k in in_vpc}
    assert folders == _handlers_running_job_code() == {"executor", "sandbox"}


def test_in_a_vpc_the_executors_role_may_manage_its_network_interfaces(template):
    resources = resources_on(template, VPC_PARAMETERS)
    assert resources["ExecutorRole"]["Properties"]["ManagedPolicyArns"] == [{"Ref": "ExecutorVpcAccessPolicy"}]
    assert resources["JobSandboxRole"]["Properties"]["ManagedPolicyArns"] == [{"Ref": "ExecutorVpcAccessPolicy"}]
    for other in ("TickRole", "DispatchRole", "ApiRole"):
        assert "ManagedPolicyArns" not in resources[other]["Properties"]
    statements = resources["ExecutorVpcAccessPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    granted = {action for s in statements if s["Effect"] == "Allow" for action in as_list(s["Action"])}
    # AWSLambdaVPCAccessExecutionRole's EC2 actions (its logs:* on "*" are not needed: the role has its own).
    assert granted == {
        "ec2:CreateNetworkInterface",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSubnets",
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
    }
    on_everything = {a for s in statements if s["Resource"] == "*" for a in as_list(s["Action"])}
    assert on_everything == {"ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"}  # no resource-level permissions


def test_each_endpoint_exists_under_its_condition(template):
    endpoints = _endpoints(resources_on(template, VPC_PARAMETERS))
    gateways = {_service_of(e): e for e in endpoints.values() if e["VpcEndpointType"] == "Gateway"}
    interfaces = {_service_of(e): e for e in endpoints.values() if e["VpcEndpointType"] == "Interface"}
    assert set(gateways) == {"dynamodb", "s3"}
    assert set(interfaces) == {"sqs", "events", "lambda", "secretsmanager", "ssm"}
    for endpoint in gateways.values():
        assert endpoint["VpcId"] == VPC_PARAMETERS["VpcId"]
        assert endpoint["RouteTableIds"] == ROUTE_TABLES
    for endpoint in interfaces.values():
        assert endpoint["VpcId"] == VPC_PARAMETERS["VpcId"]
        assert endpoint["SubnetIds"] == SUBNETS
        assert endpoint["SecurityGroupIds"] == [{"Ref": "VpcEndpointSecurityGroup"}]
        assert endpoint["PrivateDnsEnabled"] is True  # the SDKs' usual host names resolve to the endpoint


def test_without_route_tables_the_vpc_brings_its_own_gateway_endpoints(template):
    endpoints = _endpoints(resources_on(template, {**VPC_PARAMETERS, "VpcRouteTableIds": ""}))
    assert {e["VpcEndpointType"] for e in endpoints.values()} == {"Interface"}
    assert len(endpoints) == 5


def test_a_vpc_with_a_nat_or_endpoints_of_its_own_can_go_without_the_interface_endpoints(template):
    resources = resources_on(template, {**VPC_PARAMETERS, "VpcInterfaceEndpoints": "false"})
    assert {_service_of(e) for e in _endpoints(resources).values()} == {"dynamodb", "s3"}
    assert "VpcEndpointSecurityGroup" not in resources
    assert "VpcConfig" in resources["ExecutorFunction"]["Properties"]


@pytest.mark.parametrize("count", [1, 2, 5])
def test_the_interface_endpoints_admit_https_from_each_of_the_executors_security_groups(template, count):
    groups = [f"sg-0000000000000000{i}" for i in range(count)]
    resources = resources_on(template, {**VPC_PARAMETERS, "VpcSecurityGroupIds": ",".join(groups)})
    rules = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::EC2::SecurityGroupIngress"]
    assert sorted(rule["SourceSecurityGroupId"] for rule in rules) == groups
    for rule in rules:
        assert rule["GroupId"] == {"Ref": "VpcEndpointSecurityGroup"}
        assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 443, 443)
    # Nothing else reaches the endpoints, and they open no connection.
    group = resources["VpcEndpointSecurityGroup"]["Properties"]
    assert "SecurityGroupIngress" not in group
    assert group["SecurityGroupEgress"] == [
        {
            "IpProtocol": "icmp",
            "FromPort": 252,
            "ToPort": 86,
            "CidrIp": "255.255.255.255/32",
            "Description": "No egress (matches no traffic)",
        }
    ]


@pytest.mark.filterwarnings("ignore:Tried to parse AWS:UserWarning")  # types moto has no model for (test_moto_stack)
def test_a_stack_with_them_is_created_with_its_endpoints_in_the_vpc(template, aws_credentials):
    """moto's CloudFormation creates the translated template in a VPC of its EC2: the endpoints, their security
    group's rule, the executor's VpcConfig."""
    with mock_aws():
        ec2 = boto3.client("ec2")
        vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{i}.0/24", AvailabilityZone=f"us-east-1{zone}")["Subnet"]
            for i, zone in enumerate("ab")
        ]
        group = ec2.create_security_group(GroupName="executor", Description="the executor", VpcId=vpc)["GroupId"]
        tables = [ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"] for _ in subnets]
        parameters = {
            "VpcSubnetIds": ",".join(s["SubnetId"] for s in subnets),
            "VpcSecurityGroupIds": group,
            "VpcId": vpc,
            "VpcRouteTableIds": ",".join(tables),
        }
        body, _, _ = strip_for_moto(translate(template, parameters))
        upload_placeholder_code(boto3.client("s3"))
        cloudformation = boto3.client("cloudformation")
        cloudformation.create_stack(
            StackName="tickwork-vpc",
            TemplateBody=json.dumps(body),
            Capabilities=["CAPABILITY_IAM"],
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
        )
        assert cloudformation.describe_stacks(StackName="tickwork-vpc")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
        physical = {
            r["LogicalResourceId"]: r.get("PhysicalResourceId")
            for r in cloudformation.describe_stack_resources(StackName="tickwork-vpc")["StackResources"]
            if "LogicalResourceId" in r  # moto lists what it skipped without one
        }
        endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["VpcEndpoints"]
        assert {(e["ServiceName"].rsplit(".", 1)[-1], e["VpcEndpointType"]) for e in endpoints} == {
            ("dynamodb", "Gateway"),
            ("s3", "Gateway"),
            *((service, "Interface") for service in ("sqs", "events", "lambda", "secretsmanager", "ssm")),
        }
        (endpoint_group,) = ec2.describe_security_groups(GroupIds=[physical["VpcEndpointSecurityGroup"]])[
            "SecurityGroups"
        ]
        assert [
            (r["IpProtocol"], r["FromPort"], [g["GroupId"] for g in r["UserIdGroupPairs"]])
            for r in endpoint_group["IpPermissions"]
        ] == [("tcp", 443, [group])]
        executor = boto3.client("lambda").get_function_configuration(FunctionName=physical["ExecutorFunction"])
        assert sorted(executor["VpcConfig"]["SubnetIds"]) == sorted(s["SubnetId"] for s in subnets)
        assert executor["VpcConfig"]["SecurityGroupIds"] == [group]
        tick = boto3.client("lambda").get_function_configuration(FunctionName=physical["TickFunction"])
        assert not tick.get("VpcConfig", {}).get("SubnetIds")


def test_the_vpc_parameters_are_checked_together_before_a_deploy(template):
    rule = template["Rules"]["VpcParametersTogether"]
    assert rule["RuleCondition"] == {"Fn::Not": [{"Fn::EachMemberEquals": [{"Ref": "VpcSubnetIds"}, ""]}]}
    asserted = str([assertion["Assert"] for assertion in rule["Assertions"]])
    assert "VpcSecurityGroupIds" in asserted
    assert "VpcId" in asserted


def test_the_vpc_rendering_is_the_template_with_those_defaults(template, tmp_path):
    out = tmp_path / "vpc.json"
    assert template_renderings.main(["vpc", str(out)]) == 0
    rendered = json.loads(out.read_text(encoding="utf-8"))
    assert {name: rendered["Parameters"][name]["Default"] for name in VPC_PARAMETERS} == VPC_PARAMETERS
    assert {k: v for k, v in rendered.items() if k != "Parameters"} == {
        k: v for k, v in template.items() if k != "Parameters"
    }


def test_the_rendering_refuses_an_unknown_rendering_or_parameter(template, tmp_path, capsys):
    assert template_renderings.main(["nat", str(tmp_path / "x.json")]) == 2
    assert "usage" in capsys.readouterr().out
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(KeyError, match="VpcSubnetId"):
        template_renderings.with_defaults(template, {"VpcSubnetId": "subnet-0a"})


# ---------------------------------------------------------------- every service the code calls


def _clients_in(root: Path) -> dict[str, set[str]]:
    """Every boto3 client the code under root builds, by service name: the first argument of each
    `.client("<service>")` and `.single_attempt_client("<service>", ...)` (AwsClients', boto3's, a session's)."""
    found: dict[str, set[str]] = {}
    for source in root.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("client", "single_attempt_client")
                and node.args
            ):
                first = node.args[0]
                if source == CLIENT_FACTORY:
                    continue  # AwsClients builds each client from the name its caller gives
                assert isinstance(first, ast.Constant), f"{source}:{node.lineno}: a client's service is a literal"
                found.setdefault(first.value, set()).add(str(source.relative_to(REPO_ROOT)))
    return found


def _deployed_clients() -> dict[str, set[str]]:
    """The clients of the code the functions run: the layer (shared/) and the functions' own folders."""
    found = _clients_in(REPO_ROOT / "shared")
    for service, sources in _clients_in(REPO_ROOT / "functions").items():
        found.setdefault(service, set()).update(sources)
    return found


def test_the_code_scan_finds_the_clients_it_should():
    """The scan is not vacuous: the clients services.py and the lambda job type build are found."""
    found = _deployed_clients()
    assert {"dynamodb", "sqs", "s3", "events", "lambda", "cloudwatch"} <= set(found)
    assert "shared/tickwork/jobtypes/lambda_invoke.py" in found["lambda"]


def _network_table() -> dict[str, tuple[str, str]]:
    """docs/security.md's table of how an executor in a VPC reaches each AWS service: {service: (how, resource)}."""
    text = SECURITY_DOC.read_text(encoding="utf-8")
    section = text.split("<!-- services: the executor in a VPC -->", 1)[1].split("<!-- end services -->", 1)[0]
    rows = {}
    for line in section.strip().splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        service = cells[0].strip("`")
        how = cells[1]
        resource = re.findall(r"`(\w+)`", cells[2])
        rows[service] = (how, resource[0] if resource else "")
    return rows


def _executor_services(template) -> set[str]:
    """The services the executor's role grants actions of (the IAM prefix of each action)."""
    return {
        action.split(":", 1)[0]
        for role, statement in iam_statements(template)
        if role == "ExecutorRole" and statement["Effect"] == "Allow"
        for action in as_list(statement["Action"])
    }


# How a row says the executor reaches a service (docs/security.md, "Private networks").
GATEWAY, INTERFACE, OUTSIDE = "gateway endpoint", "interface endpoint", "not from the VPC"
LAMBDAS_OWN, THROUGH_ANOTHER = "Lambda's own", "through another service"


def test_every_aws_service_the_functions_call_has_an_endpoint_or_a_documented_reason(template):
    table = _network_table()
    clients = _deployed_clients()
    granted = _executor_services(template)
    assert set(clients) | granted <= set(table), "add a row to docs/security.md's table of services"
    endpoints = _endpoints(resources_on(template, VPC_PARAMETERS))
    model = botocore.session.get_session()
    for service, (how, resource) in table.items():
        if how in (GATEWAY, INTERFACE):
            endpoint = endpoints[resource]
            assert endpoint["VpcEndpointType"] == how.split()[0].capitalize(), service
            # The host the service's client calls is the endpoint's: botocore's own endpoint prefix.
            assert _service_of(endpoint) == model.get_service_model(service).endpoint_prefix, service
        elif how == OUTSIDE:
            # Only functions outside a VPC call it: the executor's role may not.
            assert service not in granted, f"the executor may call {service}: it needs an endpoint"
        elif how in (LAMBDAS_OWN, THROUGH_ANOTHER):
            # Lambda itself carries it (logs, EMF metrics, X-Ray segments), or a service calls it for the executor
            # (KMS for Secrets Manager): no code of ours builds a client.
            assert service not in clients, f"{service} is called by {sorted(clients[service])}: it needs an endpoint"
        else:
            raise AssertionError(f"{service}: unknown way {how!r}")
    # Every endpoint the stack adds is in the table (none costs money unsaid).
    assert {resource for how, resource in table.values() if how in (GATEWAY, INTERFACE)} == set(endpoints)
