"""docs/deploy.md's generated sections, read from template.yaml so that they cannot drift from it: what the stack
holds, the Lambda concurrency its event sources may take, every parameter, the alarms, and what a teardown keeps.

    python -m tickwork_local.generate.deploy_doc           # rewrite the sections in docs/deploy.md
    python -m tickwork_local.generate.deploy_doc --check   # exit 1 when the committed sections differ (a test runs this)

Each section stands between `<!-- generated: NAME ... -->` and `<!-- end generated: NAME -->`; the rest of the
file is written by hand and left as it is.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tickwork_local.stack.template import REPO_ROOT, load_template

DEPLOY_DOC = REPO_ROOT / "docs" / "deploy.md"
_SECTION = re.compile(
    r"(?P<begin><!-- generated: (?P<name>[a-z-]+) [^>]*-->\n)(?P<body>.*?)(?P<end><!-- end generated: (?P=name) -->)",
    re.DOTALL,
)

# What the stack holds, by resource type, in the order a reader meets them (after SAM's transform a function is
# also its role, permissions and event source mappings; these are the template's own resources).
HOLDINGS = (
    ("AWS::Serverless::LayerVersion", "layer", "layers"),
    ("AWS::Serverless::Function", "function", "functions"),
    ("AWS::DynamoDB::Table", "table", "tables"),
    ("AWS::SQS::Queue", "queue", "queues"),
    ("AWS::S3::Bucket", "bucket", "buckets"),
    ("AWS::Serverless::HttpApi", "HTTP API", "HTTP APIs"),
    ("AWS::IAM::Role", "function role", "function roles"),
    ("AWS::IAM::ManagedPolicy", "caller policy", "caller policies"),
    ("AWS::SecretsManager::Secret", "secret", "secrets"),
    ("AWS::Logs::LogGroup", "log group", "log groups"),
    ("AWS::SNS::Topic", "alarm topic", "alarm topics"),
    ("AWS::KMS::Key", "KMS key", "KMS keys"),
    ("AWS::CloudWatch::Alarm", "alarm", "alarms"),
    ("AWS::CloudWatch::Dashboard", "dashboard", "dashboards"),
)


def _of_type(template: Mapping[str, Any], type_: str) -> list[str]:
    return sorted(k for k, r in template["Resources"].items() if r["Type"] == type_)


# Conditions that hold with every parameter at its default: the jobs table is the stack's own (JobsTable) unless
# RegionMode makes it a global table (docs/regions.md).
DEFAULT_CONDITIONS = frozenset({"SingleRegion"})


def _held_by_default(template: Mapping[str, Any], type_: str) -> list[str]:
    """Resources of a type that a stack of the defaults holds: not those a parameter turns on (a `Condition`), such
    as the private network's (docs/security.md)."""
    conditions = {k: template["Resources"][k].get("Condition") for k in _of_type(template, type_)}
    return [k for k, condition in conditions.items() if condition is None or condition in DEFAULT_CONDITIONS]


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def counts(template: Mapping[str, Any]) -> dict[str, int]:
    """How many resources of each type in HOLDINGS every stack holds (by its plural name)."""
    return {plural: len(_held_by_default(template, type_)) for type_, _, plural in HOLDINGS}


def holdings_section(template: Mapping[str, Any]) -> str:
    rows = ["| What | How many | Logical ids |", "|---|---|---|"]
    for type_, singular, plural in HOLDINGS:
        ids = _held_by_default(template, type_)
        if ids:
            rows.append(f"| {plural if len(ids) > 1 else singular} | {len(ids)} | {', '.join(f'`{i}`' for i in ids)} |")
    return "\n".join(rows)


def _default_of(template: Mapping[str, Any], value: Any) -> tuple[str, int]:
    """A number as the template gives it, or a Ref to a parameter: how to say it, and its default's value."""
    if isinstance(value, dict) and "Ref" in value:
        default = int(template["Parameters"][value["Ref"]]["Default"])
        return f"`{value['Ref']}` (default {default})", default
    return f"{int(value)} (fixed)", int(value)


def concurrency_section(template: Mapping[str, Any]) -> str:
    """Every SQS event source's MaximumConcurrency, and their sum with the parameters' defaults."""
    rows = ["| Function | Event source | MaximumConcurrency |", "|---|---|---|"]
    total = 0
    bands = 0
    for function in _of_type(template, "AWS::Serverless::Function"):
        events = template["Resources"][function]["Properties"].get("Events", {})
        for name, event in sorted(events.items()):
            if event["Type"] != "SQS":
                continue
            queue = event["Properties"]["Queue"]["Fn::GetAtt"][0]
            said, value = _default_of(template, event["Properties"]["ScalingConfig"]["MaximumConcurrency"])
            rows.append(f"| `{function}` | `{name}` (`{queue}`) | {said} |")
            total += value
            if function == "ExecutorFunction":
                bands += value
    api = template["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"]
    rows += [
        "",
        f"With the defaults the executor's three bands may take **{bands}** concurrent executions; all the SQS event "
        f"sources together **{total}**. The tick adds 1 (once a minute), and the API function what its requests "
        f"need (its throttle: {api['ThrottlingRateLimit']} requests/s, bursts of {api['ThrottlingBurstLimit']}).",
    ]
    return "\n".join(rows)


def _allowed(parameter: Mapping[str, Any]) -> str:
    if "AllowedValues" in parameter:
        return ", ".join(f"`{v}`" for v in parameter["AllowedValues"])
    low, high = parameter.get("MinValue"), parameter.get("MaxValue")
    if low is not None and high is not None:
        return f"{low}\u2013{high}"  # an en dash, as the docs write ranges
    if low is not None:
        return f"≥ {low}"
    if parameter["Type"] == "CommaDelimitedList":
        return "comma-separated"
    return "any"


def parameters_section(template: Mapping[str, Any]) -> str:
    rows = ["| Parameter | Default | Allowed | What it does |", "|---|---|---|---|"]
    for name, parameter in template["Parameters"].items():
        default = parameter.get("Default")
        shown = "*(empty)*" if default in ("", None) else f"`{default}`"
        rows.append(f"| `{name}` | {shown} | {_allowed(parameter)} | {_cell(parameter.get('Description', ''))} |")
    return "\n".join(rows)


def alarms_section(template: Mapping[str, Any]) -> str:
    """Every alarm with what it says when it fires."""
    return "\n".join(
        f"- `{alarm}`: {_cell(template['Resources'][alarm]['Properties'].get('AlarmDescription', ''))}"
        for alarm in _of_type(template, "AWS::CloudWatch::Alarm")
    )


def retained_section(template: Mapping[str, Any]) -> str:
    """What `sam delete` leaves behind: resources with DeletionPolicy Retain (and layers' RetentionPolicy)."""
    lines = []
    for logical_id, resource in template["Resources"].items():
        if resource.get("DeletionPolicy") == "Retain":
            lines.append(f"- `{logical_id}` ({resource['Type']}): `DeletionPolicy: Retain`, kept.")
        retention = resource.get("Properties", {}).get("RetentionPolicy")
        if retention:
            kept = "kept" if retention == "Retain" else "deleted with the stack"
            lines.append(f"- `{logical_id}` ({resource['Type']}): `RetentionPolicy: {retention}`, its versions {kept}.")
    return "\n".join(lines)


SECTIONS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "holdings": holdings_section,
    "concurrency": concurrency_section,
    "parameters": parameters_section,
    "alarms": alarms_section,
    "retained": retained_section,
}


def render(document: str, template: Mapping[str, Any]) -> str:
    """The document with every generated section rewritten from the template; ValueError for an unknown section
    or a missing one."""
    seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in SECTIONS:
            raise ValueError(f"unknown generated section {name!r}")
        seen.add(name)
        return f"{match.group('begin')}{SECTIONS[name](template)}\n{match.group('end')}"

    rendered = _SECTION.sub(replace, document)
    missing = set(SECTIONS) - seen
    if missing:
        raise ValueError(f"no generated section for {', '.join(sorted(missing))}")
    return rendered


def write_or_check(path: Path, render_page: Callable[[str], str], args: list[str], generator: str) -> int:
    """A generator's command line: rewrite the page's generated sections, or (`--check`) exit 1 when they differ."""
    current = path.read_text(encoding="utf-8")
    wanted = render_page(current)
    if "--check" in args:
        if wanted != current:
            print(f"{path}: its generated sections differ from what they say; run python -m {generator}")
            return 1
        return 0
    if wanted != current:
        path.write_text(wanted, encoding="utf-8")
        print(f"rewrote the generated sections of {path}")
    return 0


def main(argv: list[str] | None = None, path: Path = DEPLOY_DOC) -> int:
    args = sys.argv[1:] if argv is None else argv
    return write_or_check(path, lambda page: render(page, load_template()), args, "tickwork_local.generate.deploy_doc")


if __name__ == "__main__":
    raise SystemExit(main())
