"""template.yaml as it deploys with other parameter values: a copy whose parameters' defaults are those values.

cfn-lint, `sam validate --lint` and checkov read a template's conditions with its parameters' defaults, so the
branches that a parameter turns on are checked only in such a copy. CI lints and scans seven renderings: template.yaml
itself (no VPC, no token API, no hosted console, one region), `vpc` (the executor in a VPC, with its endpoints;
docs/security.md, "Private networks"), `jwt` (the token API and the hosted console, with the stack's own Cognito
user pool; docs/security.md, "Sign-in with tokens (JWT)", "The hosted console"), `issuer` (the same with an IdP of
your own: the console's client is the first audience), `provisioned` (the table's provisioned capacity with auto
scaling on it and each index; docs/scale.md), `strong` and `eventual` (the jobs table as a DynamoDB global table,
MRSC or MREC, as the stack that creates it deploys; docs/regions.md).

    python -m tickwork_local.stack.template_renderings vpc|jwt|issuer|provisioned|strong|eventual OUT.json   # write the rendering
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tickwork_local.stack.template import load_template

# Ids of the right shape for a VPC of two Availability Zones: nothing is looked up, the tools check shapes only.
VPC_PARAMETERS: dict[str, str] = {
    "VpcSubnetIds": "subnet-0a1b2c3d4e5f60001,subnet-0a1b2c3d4e5f60002",
    "VpcSecurityGroupIds": "sg-0a1b2c3d4e5f60001,sg-0a1b2c3d4e5f60002",
    "VpcId": "vpc-0a1b2c3d4e5f60001",
    "VpcRouteTableIds": "rtb-0a1b2c3d4e5f60001,rtb-0a1b2c3d4e5f60002",
}

# The token API and the user pool it takes its tokens from: CreateUserPool's branch holds every resource JwtIssuer's
# does, and the pool's besides.
JWT_PARAMETERS: dict[str, str] = {"CreateUserPool": "true"}
# The token API and the hosted console with an issuer of your own (an Okta authorization server's shape).
ISSUER_PARAMETERS: dict[str, str] = {
    "JwtIssuer": "https://example.okta.com/oauth2/default",
    "JwtAudience": "0oa1tickworkconsole,api://tickwork",
}

# The table with provisioned capacity and auto scaling on it and its indexes (docs/scale.md).
PROVISIONED_PARAMETERS: dict[str, str] = {"TableBillingMode": "PROVISIONED"}
# A global table shared by three regions' stacks (docs/regions.md), as the stack in the first region, which creates
# it, deploys: MRSC with two replicas and a witness; MREC with three replicas, this region active.
STRONG_PARAMETERS: dict[str, str] = {
    "RegionMode": "strong",
    "GlobalTableName": "tickwork-jobs",
    "GlobalTableRegions": "us-east-1,us-east-2",
    "WitnessRegion": "us-west-2",
}
EVENTUAL_PARAMETERS: dict[str, str] = {
    "RegionMode": "eventual",
    "GlobalTableName": "tickwork-jobs",
    "GlobalTableRegions": "us-east-1,us-east-2,us-west-2",
}

RENDERINGS: dict[str, dict[str, str]] = {
    "vpc": VPC_PARAMETERS,
    "jwt": JWT_PARAMETERS,
    "issuer": ISSUER_PARAMETERS,
    "provisioned": PROVISIONED_PARAMETERS,
    "strong": STRONG_PARAMETERS,
    "eventual": EVENTUAL_PARAMETERS,
}


def with_defaults(template: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """A copy of the template whose named parameters default to these values (KeyError for an unknown one)."""
    result = copy.deepcopy(dict(template))
    for name, value in values.items():
        result["Parameters"][name]["Default"] = value
    return result


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in RENDERINGS:
        print(f"usage: python -m tickwork_local.stack.template_renderings {{{','.join(RENDERINGS)}}} OUT.json")
        return 2
    out = Path(args[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(with_defaults(load_template(), RENDERINGS[args[0]]), indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
