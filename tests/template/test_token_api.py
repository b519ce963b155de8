"""Sign-in with tokens (docs/security.md, "Sign-in with tokens (JWT)"): with JwtIssuer, or CreateUserPool, a second
HTTP API (TokenApi) admits bearer JWTs to the same function; without, the stack holds nothing of it. With
CreateUserPool the stack's own Cognito user pool is the issuer.

The template is read as CloudFormation deploys it with the parameters given (template_support.evaluate); cfn-lint,
`sam validate --lint` and checkov check the `jwt` rendering (test_cfn_lint.py, test_checkov.py; Makefile)."""

from __future__ import annotations

import json
from typing import Any

from template_support import evaluate, resources_on, translate
from tickwork_local.stack import template_renderings
from tickwork_local.stack.template_renderings import JWT_PARAMETERS

ISSUER = "https://example.okta.com/oauth2/default"
OKTA = {"JwtIssuer": ISSUER, "JwtAudience": "api://tickwork,tickwork-cli"}
TOKEN_API = {
    "TokenApi",
    "TokenApiAuthorizer",
    "TokenApiIntegration",
    "TokenApiRoute",
    "TokenApiStage",
    "TokenApiAccessLogGroup",
    "TokenApiInvokePermission",
    "TokenApiServerErrorsAlarm",
}
USER_POOL = {"UserPool", "UserPoolClient", "UserPoolAdminGroup"}
HOSTED_CONSOLE = {"TokenApiConsoleRoute", "TokenApiConsoleFilesRoute"}


def _outputs_on(template: dict[str, Any], parameters: dict[str, str]) -> set[str]:
    return {
        name
        for name, output in template["Outputs"].items()
        if "Condition" not in output or evaluate(template, {"Condition": output["Condition"]}, parameters)
    }


def _api_environment(resources: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return resources["ApiFunction"]["Properties"]["Environment"]["Variables"]


def test_without_an_issuer_the_stack_has_no_token_api_and_accepts_no_token(template):
    resources = resources_on(template, {})
    assert not (TOKEN_API | USER_POOL) & set(resources)
    assert not [k for k, r in resources.items() if r["Type"].startswith(("AWS::Cognito::", "AWS::ApiGatewayV2::"))]
    assert not {"TokenApiUrl", "UserPoolId", "UserPoolClientId"} & _outputs_on(template, {})
    assert _api_environment(resources)["JWT_ISSUER"] == ""
    # A user pool asked for beside an issuer given is not made: the issuer's tokens are the ones accepted.
    assert not USER_POOL & set(resources_on(template, {**OKTA, "CreateUserPool": "true"}))


def test_an_issuer_adds_the_token_api_whose_one_route_a_jwt_authorizer_guards(template):
    resources = resources_on(template, OKTA)
    assert set(resources) >= TOKEN_API
    assert not USER_POOL & set(resources)
    authorizer = resources["TokenApiAuthorizer"]["Properties"]
    assert authorizer["AuthorizerType"] == "JWT"
    assert authorizer["IdentitySource"] == ["$request.header.Authorization"]
    assert authorizer["JwtConfiguration"] == {"Issuer": ISSUER, "Audience": ["api://tickwork", "tickwork-cli"]}
    route = resources["TokenApiRoute"]["Properties"]
    assert (route["RouteKey"], route["AuthorizationType"]) == ("$default", "JWT")
    assert route["AuthorizerId"] == {"Ref": "TokenApiAuthorizer"}
    # No route of the token API goes without the authorizer but the hosted console's, GETs of its files.
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::ApiGatewayV2::Route"
    }
    assert set(routes) == {"$default", "GET /console", "GET /console/{proxy+}"}
    assert {routes[key]["AuthorizationType"] for key in ("GET /console", "GET /console/{proxy+}")} == {"NONE"}
    integration = resources["TokenApiIntegration"]["Properties"]
    assert integration["IntegrationUri"] == {"Fn::GetAtt": ["ApiFunction", "Arn"]}
    assert (integration["IntegrationType"], integration["PayloadFormatVersion"]) == ("AWS_PROXY", "2.0")
    # The same stage settings as the IAM API's: throttled alike, with an access log.
    stage = resources["TokenApiStage"]["Properties"]
    iam_api = resources["HttpApi"]["Properties"]
    assert stage["DefaultRouteSettings"] == iam_api["DefaultRouteSettings"]
    assert stage["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": ["TokenApiAccessLogGroup", "Arn"]}
    assert json.loads(stage["AccessLogSettings"]["Format"])["subject"] == "$context.authorizer.claims.sub"
    assert resources["TokenApiInvokePermission"]["Properties"]["FunctionName"] == {"Ref": "ApiFunction"}
    # Its 5xx alarm, as the IAM API's.
    alarm = resources["TokenApiServerErrorsAlarm"]["Properties"]
    assert alarm["Dimensions"] == [{"Name": "ApiId", "Value": {"Ref": "TokenApi"}}]
    iam_alarm = resources["ApiServerErrorsAlarm"]["Properties"]
    assert {k: v for k, v in alarm.items() if k not in ("Dimensions", "AlarmDescription")} == {
        k: v for k, v in iam_alarm.items() if k not in ("Dimensions", "AlarmDescription")
    }
    assert {"TokenApiUrl", "ConsoleUrl"} <= _outputs_on(template, OKTA)
    environment = _api_environment(resources)
    # The hosted console signs in with the first audience, unless ConsoleClientId names the client.
    assert environment["CONSOLE_CLIENT_ID"] == "api://tickwork"
    assert (
        _api_environment(resources_on(template, {**OKTA, "ConsoleClientId": "0oa1console"}))["CONSOLE_CLIENT_ID"]
        == "0oa1console"
    )
    assert (environment["JWT_ISSUER"], environment["JWT_TENANT_CLAIM"]) == (ISSUER, "groups")
    assert (environment["JWT_TENANT_PREFIX"], environment["JWT_ADMIN_GROUP"]) == ("tickwork-tenant-", "tickwork-admin")
    # The IAM API is as it was.
    assert iam_api["Auth"] == {"EnableIamAuthorizer": True, "DefaultAuthorizer": "AWS_IAM"}


def test_create_user_pool_makes_the_pool_its_public_client_and_admin_group_and_trusts_its_tokens(template):
    resources = resources_on(template, JWT_PARAMETERS)
    assert set(resources) >= (TOKEN_API | USER_POOL)
    pool = resources["UserPool"]["Properties"]
    assert pool["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": True}
    client = resources["UserPoolClient"]["Properties"]
    assert client["GenerateSecret"] is False
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert resources["UserPoolAdminGroup"]["Properties"]["GroupName"] == "tickwork-admin"
    issuer = "https://cognito-idp.${AWS::Region}.${AWS::URLSuffix}/${UserPool}"  # Sub leaves resources as they are
    authorizer = resources["TokenApiAuthorizer"]["Properties"]["JwtConfiguration"]
    assert authorizer == {"Issuer": issuer, "Audience": [{"Ref": "UserPoolClient"}]}
    environment = _api_environment(resources)
    assert (environment["JWT_ISSUER"], environment["JWT_TENANT_CLAIM"]) == (issuer, "cognito:groups")
    assert {"TokenApiUrl", "UserPoolId", "UserPoolClientId"} <= _outputs_on(template, JWT_PARAMETERS)
    # The hosted console signs in with the pool's client, on the pool's domain, and is one of its callbacks.
    assert environment["CONSOLE_CLIENT_ID"] == {"Ref": "UserPoolClient"}
    assert "UserPoolDomain" in resources
    # Its sign-out, which Cognito's discovery does not name.
    assert environment["CONSOLE_LOGOUT_URL"] == "https://${UserPoolDomain}.auth.${AWS::Region}.amazoncognito.com/logout"
    console_url = "https://${TokenApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/console/"
    assert console_url in client["CallbackURLs"]
    assert "ConsoleUrl" in _outputs_on(template, JWT_PARAMETERS)
    # No admin group named: no group made.
    assert "UserPoolAdminGroup" not in resources_on(template, {**JWT_PARAMETERS, "JwtAdminGroup": ""})


def test_hosted_console_false_leaves_a_token_api_with_no_console(template):
    for parameters in ({**OKTA, "HostedConsole": "false"}, {**JWT_PARAMETERS, "HostedConsole": "false"}):
        resources = resources_on(template, parameters)
        assert not (HOSTED_CONSOLE | {"UserPoolDomain"}) & set(resources)
        assert _api_environment(resources)["CONSOLE_CLIENT_ID"] == ""
        assert _api_environment(resources)["CONSOLE_LOGOUT_URL"] == ""
        assert "ConsoleUrl" not in _outputs_on(template, parameters)


def test_an_iam_only_stack_has_no_hosted_console(template):
    resources = resources_on(template, {})
    assert not (HOSTED_CONSOLE | {"UserPoolDomain"}) & set(resources)
    assert _api_environment(resources)["CONSOLE_CLIENT_ID"] == ""


def test_an_issuer_needs_an_audience_and_excludes_a_user_pool(template):
    rule = template["Rules"]["JwtIssuerWithAudience"]
    assert rule["RuleCondition"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "JwtIssuer"}, ""]}]}
    asserted = str([assertion["Assert"] for assertion in rule["Assertions"]])
    assert "JwtAudience" in asserted
    assert "CreateUserPool" in asserted


def test_the_jwt_rendering_is_the_template_with_the_user_pool_on(template, tmp_path):
    out = tmp_path / "jwt.json"
    assert template_renderings.main(["jwt", str(out)]) == 0
    rendered = json.loads(out.read_text(encoding="utf-8"))
    assert {name: rendered["Parameters"][name]["Default"] for name in JWT_PARAMETERS} == JWT_PARAMETERS
    assert {k: v for k, v in rendered.items() if k != "Parameters"} == {
        k: v for k, v in template.items() if k != "Parameters"
    }


def test_sam_keeps_the_token_api_and_the_pool_under_their_conditions(template, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    translated = translate(template_renderings.with_defaults(template, JWT_PARAMETERS))
    resources = translated["Resources"]
    assert {name: resources[name]["Condition"] for name in TOKEN_API} == dict.fromkeys(TOKEN_API, "HasJwtIssuer")
    assert {resources[name]["Condition"] for name in USER_POOL} == {"CreatesUserPool", "CreatesUserPoolAdminGroup"}
    # SAM's own API (HttpApi) and its invoke permission stay unconditional: SigV4 is always accepted.
    assert "Condition" not in resources["HttpApi"]
