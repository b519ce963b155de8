"""Helpers shared by the template tests: translation, stripping for moto, IAM statement walking."""

from __future__ import annotations

import copy
import io
import json
import re
import zipfile
from collections.abc import Iterator
from typing import Any

from samtranslator.translator.transform import transform

# Where translated functions and the layer "live": the stack test uploads a stub zip here.
CODE_BUCKET = "tickwork-template-test-code"
FUNCTION_KEY = "function.zip"
LAYER_KEY = "layer.zip"

# What moto's CloudFormation cannot create (it fails on these); everything that depends on them
# only through a reference is kept, with that reference replaced by a "stripped-<Id>" literal.
MOTO_UNSUPPORTED_TYPES = ("AWS::ApiGatewayV2::", "AWS::ApiGateway::", "AWS::CloudWatch::Alarm")


class _NoManagedPolicies:
    """aws-sam-translator's managed-policy loader: called only for managed-policy names in `Policies`."""

    def load(self) -> dict[str, str]:
        return {}


def with_placeholder_code(template: dict[str, Any]) -> dict[str, Any]:
    """A copy whose local CodeUri/ContentUri folders are s3:// placeholders (translation needs them)."""
    result = copy.deepcopy(template)
    for resource in result["Resources"].values():
        props = resource.get("Properties", {})
        if "CodeUri" in props:
            props["CodeUri"] = f"s3://{CODE_BUCKET}/{FUNCTION_KEY}"
        if "ContentUri" in props:
            props["ContentUri"] = f"s3://{CODE_BUCKET}/{LAYER_KEY}"
    return result


def upload_placeholder_code(s3: Any) -> None:
    """Where the placeholders point (with_placeholder_code), in moto: the bucket, with a stub handler's zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return None\n")
    s3.create_bucket(Bucket=CODE_BUCKET)
    for key in (FUNCTION_KEY, LAYER_KEY):
        s3.put_object(Bucket=CODE_BUCKET, Key=key, Body=buffer.getvalue())


def translate(template: dict[str, Any], parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """SAM -> plain CloudFormation, offline. Needs AWS_DEFAULT_REGION set."""
    return transform(with_placeholder_code(template), parameters or {}, _NoManagedPolicies())


def _references(value: Any) -> set[str]:
    """Logical ids a value refers to (Ref, GetAtt, ${X} / ${X.Attr} in Sub)."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= _references(item)
    elif isinstance(value, dict):
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                found.add(arg)
            elif key == "Fn::GetAtt":
                found.add(arg.split(".", 1)[0] if isinstance(arg, str) else arg[0])
            elif key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                found |= {m.split(".", 1)[0] for m in re.findall(r"\$\{([^!}][^}]*)\}", text)}
                if not isinstance(arg, str):
                    found |= _references(arg[1])
            else:
                found |= _references(arg)
    return found


def _stub(value: Any, stripped: set[str]) -> Any:
    if isinstance(value, list):
        return [_stub(item, stripped) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref" and arg in stripped:
            return f"stripped-{arg}"
        if key == "Fn::GetAtt":
            target = arg.split(".", 1)[0] if isinstance(arg, str) else arg[0]
            if target in stripped:
                return f"stripped-{target}"
        if key == "Fn::Sub" and isinstance(arg, str):

            def replace(match: re.Match[str]) -> str:
                name = match.group(1)
                return f"stripped-{name.split('.', 1)[0]}" if name.split(".", 1)[0] in stripped else match.group(0)

            return {"Fn::Sub": re.sub(r"\$\{([^!}][^}]*)\}", replace, arg)}
    return {key: _stub(arg, stripped) for key, arg in value.items()}


def strip_for_moto(translated: dict[str, Any]) -> tuple[dict[str, Any], list[str], dict[str, list[str]]]:
    """Remove what moto's CloudFormation cannot create.

    Returns (template, stripped logical ids, {kept logical id or "Outputs.X": stripped ids it
    referred to, now replaced by literals}). The API's invoke permission goes with the API: its
    only purpose is to let API Gateway call ApiFunction.
    """
    template = copy.deepcopy(translated)
    resources = template["Resources"]
    stripped = {
        logical_id
        for logical_id, resource in resources.items()
        if resource["Type"].startswith(MOTO_UNSUPPORTED_TYPES)
        or (
            resource["Type"] == "AWS::Lambda::Permission"
            and resource["Properties"].get("Principal") == "apigateway.amazonaws.com"
        )
    }
    for logical_id in stripped:
        del resources[logical_id]
    stubbed: dict[str, list[str]] = {}
    for logical_id, resource in resources.items():
        refs = sorted(_references(resource) & stripped)
        if refs:
            stubbed[logical_id] = refs
            resources[logical_id] = _stub(resource, stripped)
    for name, output in template.get("Outputs", {}).items():
        refs = sorted(_references(output) & stripped)
        if refs:
            stubbed[f"Outputs.{name}"] = refs
            template["Outputs"][name] = _stub(output, stripped)
    return template, sorted(stripped), stubbed


def iam_statements(template: dict[str, Any], *, as_written: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """(role logical id, statement) for every inline policy statement of every IAM role; a Resource that is the jobs
    table's ARN in one region or a global table's (docs/regions.md) as a single-region stack names it, and each branch of
    a statement granted under a condition; unless `as_written` (then as the template has them, conditions too)."""
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::IAM::Role":
            continue
        for policy in resource["Properties"].get("Policies", []):
            statements = policy["PolicyDocument"]["Statement"]
            for statement in statements if isinstance(statements, list) else [statements]:
                if isinstance(statement, dict) and "Fn::If" in statement and as_written:
                    yield logical_id, statement  # granted under a condition: the caller evaluates it
                    continue
                if isinstance(statement, dict) and "Fn::If" in statement:  # a statement granted under a condition
                    _, granted, otherwise = statement["Fn::If"]
                    candidates = [s for s in (granted, otherwise) if "Effect" in s]
                else:
                    candidates = [statement]
                for granted_statement in candidates:
                    if as_written or "Resource" not in granted_statement:
                        yield logical_id, granted_statement
                    else:
                        named = _single_region(granted_statement["Resource"])
                        yield logical_id, {**granted_statement, "Resource": named}


def _single_region(value: Any) -> Any:
    if isinstance(value, dict) and list(value) == ["Fn::If"] and value["Fn::If"][0] == "SingleRegion":
        return value["Fn::If"][1]
    return value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def dashboard_json(body: Any) -> dict[str, Any]:
    """The dashboard body with every ${...} replaced by a placeholder, parsed as JSON."""
    text = body["Fn::Sub"] if isinstance(body, dict) else body
    return json.loads(re.sub(r"\$\{([^}]*)\}", lambda m: f"<{m.group(1)}>", text))


_NO_VALUE = object()  # what Ref AWS::NoValue evaluates to: the list item or property is dropped


def evaluate(template: dict[str, Any], value: Any, parameters: dict[str, str] | None = None) -> Any:
    """A value as CloudFormation would deploy it with these parameters (the rest at their defaults; a pseudo
    parameter such as AWS::Region only if given): Ref of a parameter, Fn::If on the template's conditions (AWS::NoValue drops the item), Fn::Equals, Not, And, Or,
    Select, Split, Join and Sub (of parameters) worked out; references to resources are left as they are."""
    given = {name: str(p.get("Default", "")) for name, p in template.get("Parameters", {}).items()}
    given.update(parameters or {})

    def condition(name: str) -> bool:
        return bool(walk(template["Conditions"][name]))

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [item for item in (walk(i) for i in node) if item is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref" and arg == "AWS::NoValue":
                return _NO_VALUE
            if key == "Ref" and arg in given:  # a parameter, or a pseudo parameter given (AWS::Region)
                kind = template["Parameters"].get(arg, {}).get("Type")
                return given[arg].split(",") if kind == "CommaDelimitedList" else given[arg]
            if key == "Fn::If":
                name, then, otherwise = arg
                return walk(then if condition(name) else otherwise)
            if key == "Condition":
                return condition(arg)
            if key == "Fn::Equals":
                left, right = walk(arg)
                return left == right
            if key == "Fn::Not":
                return not walk(arg[0])
            if key == "Fn::And":
                return all(walk(arg))
            if key == "Fn::Or":
                return any(walk(arg))
            # Select and Split of what is known when deployed (a pseudo parameter: AWS::StackId) are left as they are.
            if key == "Fn::Select" and isinstance(items := walk(arg)[1], list):
                return items[int(walk(arg)[0])]
            if key == "Fn::Split" and isinstance(text := walk(arg)[1], str):
                return text.split(walk(arg)[0])
            if key == "Fn::Sub" and isinstance(arg, str):
                return re.sub(r"\$\{([^!}.]+)\}", lambda m: given.get(m.group(1), m.group(0)), arg)
            if key == "Fn::Sub" and isinstance(arg, list):  # with variables of its own
                text, variables = arg
                known = given | {name: v for name, v in walk(variables).items() if isinstance(v, str)}
                return re.sub(r"\$\{([^!}.]+)\}", lambda m: known.get(m.group(1), m.group(0)), text)
            if key == "Fn::Join":
                separator, items = walk(arg)
                return separator.join(items)
        return {key: item for key, item in ((k, walk(v)) for k, v in node.items()) if item is not _NO_VALUE}

    return walk(value)


def resources_on(template: dict[str, Any], parameters: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The resources a stack with these parameters holds, their properties evaluated."""
    return {
        logical_id: evaluate(template, resource, parameters)
        for logical_id, resource in template["Resources"].items()
        if "Condition" not in resource or evaluate(template, {"Condition": resource["Condition"]}, parameters)
    }
