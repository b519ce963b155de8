"""`tickwork secrets put`: a secret on the local runtime's endpoint (a moto server here), created then given a new
value, its ARN printed and never its value; an endpoint that is not on this machine is refused."""

from __future__ import annotations

import boto3
from moto.server import ThreadedMotoServer
from tickwork_cli.main import app
from typer.testing import CliRunner


def test_secrets_put_creates_then_rotates_a_local_secret_and_never_prints_it(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        runner = CliRunner()
        name = "tickwork/default/api-token"
        created = runner.invoke(app, ["secrets", "put", name, "first-value-1", "--endpoint", endpoint])
        assert created.exit_code == 0, created.output
        assert created.output.startswith("created: arn:aws:secretsmanager:us-east-1:")
        rotated = runner.invoke(app, ["secrets", "put", name, "--endpoint", endpoint], input="second-value-2\n")
        assert rotated.exit_code == 0, rotated.output
        assert rotated.output.startswith("updated")
        assert "value-" not in created.output + rotated.output
        local = boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1")
        assert local.get_secret_value(SecretId=name)["SecretString"] == "second-value-2"
    finally:
        server.stop()


def test_secrets_put_refuses_an_endpoint_that_is_not_on_this_machine():
    refused = CliRunner().invoke(
        app,
        ["secrets", "put", "tickwork/default/x", "v", "--endpoint", "https://secretsmanager.us-east-1.amazonaws.com"],
    )
    assert refused.exit_code == 2
