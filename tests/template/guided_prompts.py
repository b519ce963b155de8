"""Run by test_deploy_guided.py with SAM CLI's Python (SAM CLI lives in a venv of its own): SAM CLI's own
`sam deploy --guided` parameter prompts, answered with Enter alone.

    python guided_prompts.py TEMPLATE

Prints the values the prompts settle on, as JSON, and exits 0; exits 3 when a prompt asks again after Enter
(every parameter asked once is all the answers there are).
"""

import json
import sys

import click
from click import termui
from click.testing import CliRunner
from samcli.commands._utils.template import get_template_parameters
from samcli.commands.deploy.guided_context import GuidedContext

ASKED_AGAIN = 3


@click.command()
@click.argument("template")
def answer_with_enter(template: str) -> None:
    parameters = get_template_parameters(template)
    reads = []

    def counted(read):
        def enter(prompt: str = "") -> str:
            reads.append(prompt)
            if len(reads) > len(parameters):
                sys.exit(ASKED_AGAIN)
            return read(prompt)

        return enter

    termui.visible_prompt_func = counted(termui.visible_prompt_func)
    termui.hidden_prompt_func = counted(termui.hidden_prompt_func)
    guided = GuidedContext.__new__(GuidedContext)  # only its parameter prompts are used
    answers = guided.prompt_parameters(parameters, {}, "", "")
    click.echo(json.dumps({name: answer["Value"] for name, answer in answers.items()}))


if __name__ == "__main__":
    result = CliRunner().invoke(answer_with_enter, [sys.argv[1]], input="\n" * 1000)
    if result.exit_code == 0:
        print(result.output.splitlines()[-1])
    sys.exit(result.exit_code)
