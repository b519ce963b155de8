"""docs/deploy.md's generated sections are what template.yaml says now, and its idle cost counts what the template
holds: the guide cannot drift from the stack it describes. The README links it on its first screen."""

from __future__ import annotations

import copy
import re

import pytest
from tickwork_local.generate import deploy_doc
from tickwork_local.stack.template import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
GUIDE = deploy_doc.DEPLOY_DOC.read_text(encoding="utf-8")


def test_the_committed_guide_is_what_the_generator_writes_from_the_template(template):
    assert deploy_doc.render(GUIDE, template) == GUIDE, "run: .venv/bin/python -m tickwork_local.generate.deploy_doc"
    assert deploy_doc.main(["--check"]) == 0


def test_a_changed_template_changes_the_guide(template):
    changed = copy.deepcopy(template)
    changed["Parameters"]["NewKnob"] = {"Type": "Number", "Default": 7, "MinValue": 1, "Description": "A | knob."}
    rendered = deploy_doc.render(GUIDE, changed)
    assert "| `NewKnob` | `7` | ≥ 1 | A \\| knob. |" in rendered
    assert rendered != GUIDE


def test_check_fails_when_the_guide_has_drifted(tmp_path):
    stale = tmp_path / "deploy.md"
    stale.write_text(GUIDE.replace("| `LogLevel` | `INFO` |", "| `LogLevel` | `DEBUG` |"), encoding="utf-8")
    assert deploy_doc.main(["--check"], path=stale) == 1
    assert deploy_doc.main([], path=stale) == 0
    assert stale.read_text(encoding="utf-8") == GUIDE


def test_every_parameter_is_in_the_guide(template):
    for name in template["Parameters"]:
        assert f"| `{name}` |" in GUIDE, name


def test_a_guide_without_a_section_or_with_an_unknown_one_is_refused(template):
    with pytest.raises(ValueError, match="no generated section for alarms"):
        deploy_doc.render(
            re.sub(r"<!-- generated: alarms .*?end generated: alarms -->", "", GUIDE, flags=re.S), template
        )
    unknown = GUIDE + "<!-- generated: nonsense (x) -->\n<!-- end generated: nonsense -->\n"
    with pytest.raises(ValueError, match="unknown generated section 'nonsense'"):
        deploy_doc.render(unknown, template)


def test_the_readme_links_the_guide_on_its_first_screen():
    first_screen = "\n".join(README.splitlines()[:15])
    assert "(docs/deploy.md)" in first_screen


def test_the_idle_cost_counts_what_the_template_holds(template):
    counts = deploy_doc.counts(template)
    (alarms,) = re.findall(r"CloudWatch alarms \((\d+)\)", GUIDE)
    assert int(alarms) == counts["alarms"]
    (mappings,) = re.findall(r"SQS long polls by the (\d+) SQS event source mappings", GUIDE)
    sqs_events = [
        event
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Serverless::Function"
        for event in resource["Properties"].get("Events", {}).values()
        if event["Type"] == "SQS"
    ]
    assert int(mappings) == len(sqs_events)


def test_every_signed_example_calls_a_versioned_route():
    # ApiUrl ends in "/" and every route starts at v1/: "${API_URL}jobs" is a 404.
    for text in (README, GUIDE):
        for path in re.findall(r"\$\{API_URL\}(\S*?)[\"'\s]", text):
            assert path.startswith("v1/"), path
