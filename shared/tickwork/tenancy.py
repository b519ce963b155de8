"""Who is calling: the tenant, from the identity API Gateway verified (deployed) or the local configuration.

- auth mode iam (deployed; the default): from the SigV4 identity in requestContext.authorizer.iam. A role
  `tickwork-tenant-<name>` of the API's own account is tenant `<name>`; any other principal is
  `<account id>:role/<role name>`, `<account id>:user/<user name>` or `<account id>:root`.
- auth mode local (the local runtime, on 127.0.0.1): tenant `default`; or, with an API keys file (a JSON
  object mapping key -> tenant), the tenant of the `X-Api-Key` header.
Nothing in a request's body or headers can choose the tenant in iam mode. The mode and the keys file are
ApiSettings (tickwork.settings).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from tickwork.errors import Forbidden, Unauthenticated
from tickwork.settings import ApiSettings
from tickwork.store import TENANT

TENANT_ROLE_PREFIX = "tickwork-tenant-"

_ARN = re.compile(r"^arn:aws[a-zA-Z-]*:(?:sts|iam)::(\d{12}):(.+)$")
_keys_cache: dict[str, Any] = {}


def _iam_tenant(event: APIGatewayProxyEventV2) -> str:
    if not event.get("requestContext"):
        raise Unauthenticated("sign requests with SigV4 (IAM auth); no caller identity was found")
    context = event.request_context
    iam = context.authorizer.iam
    match = _ARN.match(iam.user_arn)
    if not match:
        raise Unauthenticated("sign requests with SigV4 (IAM auth); no caller identity was found")
    account, resource = match.groups()
    if iam.account_id and iam.account_id != account:
        raise Forbidden("the caller identity is inconsistent")
    kind, _, rest = resource.partition("/")
    if kind == "assumed-role":
        role = rest.split("/", 1)[0]
        # The API's own account: requestContext.accountId (read with get: the data class's property needs it).
        if role.startswith(TENANT_ROLE_PREFIX) and account == context.get("accountId"):
            tenant = role[len(TENANT_ROLE_PREFIX) :]
        else:
            tenant = f"{account}:role/{role}"
    elif kind == "user":
        tenant = f"{account}:user/{rest.rsplit('/', 1)[-1]}"
    elif kind == "root" and not rest:
        tenant = f"{account}:root"
    else:
        raise Forbidden(f"callers of kind {kind!r} have no tenant; use an IAM role or user")
    if not TENANT.match(tenant):
        raise Forbidden("the caller identity does not map to a valid tenant")
    return tenant


def _api_keys(path: str) -> dict[str, str]:
    """The keys file (JSON object: key -> tenant), re-read when it changes."""
    stamp = Path(path).stat().st_mtime_ns
    cached = _keys_cache.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or not all(isinstance(v, str) and TENANT.match(v) for v in data.values()):
        raise ValueError(f"{path}: must be a JSON object mapping API keys to tenant names")
    keys = {str(k): v for k, v in data.items()}
    _keys_cache[path] = (stamp, keys)
    return keys


def _local_tenant(event: APIGatewayProxyEventV2, keys_file: str | None) -> str:
    if not keys_file:
        return "default"
    key = event.headers.get("x-api-key")  # the data class's headers ignore case
    if not key:
        raise Unauthenticated("send your API key in the X-Api-Key header")
    tenant = _api_keys(keys_file).get(key)
    if tenant is None:
        raise Unauthenticated("unknown API key")
    return tenant


def tenant_of(event: APIGatewayProxyEventV2, settings: ApiSettings) -> str:
    """The caller's tenant, from the verified identity (iam) or the local configuration; never the body."""
    if settings.auth_mode == "iam":
        return _iam_tenant(event)
    return _local_tenant(event, settings.api_keys_file)
