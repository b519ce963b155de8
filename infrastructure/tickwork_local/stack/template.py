"""Read template.yaml into plain dicts, with CloudFormation short tags in their long form.

Pure YAML parsing (no AWS, no cfn-lint): `!Ref X` becomes {"Ref": "X"}, `!GetAtt A.B` becomes
{"Fn::GetAtt": ["A", "B"]}, `!Sub ...` becomes {"Fn::Sub": ...} and so on, which is what
CloudFormation, aws-sam-translator and moto's CloudFormation all take.
"""

from __future__ import annotations

import pickle
from functools import cache
from pathlib import Path
from typing import Any

import yaml

# The repository root: infrastructure/tickwork_local/stack/template.py -> ../../../
REPO_ROOT = Path(__file__).resolve().parents[3]
# Installed from the wheel (`pip install 'tickwork[dev]'`), outside a clone: the template and the functions it names,
# as the wheel carries them (package data of tickwork_local.stack_files, pyproject.toml).
PACKAGED_STACK = Path(__file__).resolve().parents[1] / "stack_files"


def default_template(root: Path = REPO_ROOT, packaged: Path = PACKAGED_STACK) -> Path:
    """The template `tickwork dev` runs: the clone's, else the wheel's copy; its folder holds the functions."""
    cloned = root / "template.yaml"
    return cloned if cloned.is_file() else packaged / "template.yaml"


DEFAULT_TEMPLATE = default_template()

# Short tags that map to "Fn::<Name>"; !Ref and !Condition are the two without the prefix.
_FN_TAGS = (
    "And",
    "Base64",
    "Cidr",
    "Equals",
    "FindInMap",
    "GetAZs",
    "GetAtt",
    "If",
    "ImportValue",
    "Join",
    "Length",
    "Not",
    "Or",
    "Select",
    "Split",
    "Sub",
    "ToJsonString",
    "Transform",
)


class _CfnLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader (libyaml's parser where PyYAML has it: a tenth of the time) plus CloudFormation tags; dates stay
    strings (as CloudFormation reads them)."""


# YAML 1.1 would turn an unquoted 2012-10-17 into a date; CloudFormation keeps it a string.
_CfnLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    raise yaml.constructor.ConstructorError(None, None, f"unexpected node {node!r}", node.start_mark)


def _make_fn(name: str):  # type: ignore[no-untyped-def]
    key = name if name in ("Ref", "Condition") else f"Fn::{name}"

    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        value = _construct(loader, node)
        if name == "GetAtt" and isinstance(value, str):
            # "Resource.Attribute" (the attribute itself may contain dots, e.g. Endpoint.Address)
            resource, _, attribute = value.partition(".")
            value = [resource, attribute]
        return {key: value}

    return construct


for _name in (*_FN_TAGS, "Ref", "Condition"):
    _CfnLoader.add_constructor(f"!{_name}", _make_fn(_name))


def loads_template(text: str) -> dict[str, Any]:
    """Parse template text (YAML or JSON) into long-form dicts, the caller's own to change."""
    return pickle.loads(_parsed(text))  # noqa: S301 - our own pickle of our own parse, never read from outside


@cache
def _parsed(text: str) -> bytes:
    """A template's parse, kept pickled: the suites and the local runtime read the same template thousands of
    times, and unpickling a copy is a fraction of parsing it again."""
    document = yaml.load(text, Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass with CFN tags only
    if not isinstance(document, dict):
        raise ValueError("a CloudFormation template must be a mapping")
    return pickle.dumps(document)


def load_template(path: Path | None = None) -> dict[str, Any]:
    """The repository's template.yaml (or `path`) as a dict with long-form intrinsic functions."""
    return loads_template(Path(path or DEFAULT_TEMPLATE).read_text(encoding="utf-8"))
