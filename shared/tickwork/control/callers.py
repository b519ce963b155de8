"""Who is calling: the caller's tenant and whether it is an admin, from the identity API Gateway verified
(deployed) or the local configuration.

- auth mode iam (deployed; the default): from the SigV4 identity in requestContext.authorizer.iam. A role
  `<TenantRolePrefix><name>` (default `tickwork-tenant-<name>`) of the API's own account is tenant `<name>`; any
  other principal is `<account id>:role/<role name>`, `<account id>:user/<user name>` or `<account id>:root`. The
  admin is an assumed role named `<AdminRoleName>` (default `tickwork-admin`) of the API's own account (its tenant
  is `<account id>:role/<that name>`). Both names are the stack's parameters, so two stacks in one account have
  their own tenants' roles and their own admin. A role that IAM Identity Center made for a permission set
  (`AWSReservedSSO_<permission set>_<16 hex>`) counts by its permission set's name: the users of a permission set
  named `tickwork-tenant-acme` are tenant `acme`, as the team's CI role `tickwork-tenant-acme` is.
  A role of the API's own account may instead name its tenant by its tag `tickwork:tenant` = `<name>` (a name as a
  role's under TenantRolePrefix; any other value is refused, 403, never another tenant), read from IAM
  (ListRoleTags: the authorizer's context carries no principal tags) and kept 5 minutes (tickwork.aws.role_tags);
  IAM failing to answer refuses the caller (503) rather than guess. Which wins: the admin is the AdminRoleName
  role, tagged or not (its tag names the tenant it acts for, as the admin); the tag wins over the name's prefix (an
  explicit attribute over a naming convention); no tag, the name counts as above. Identity Center's roles are not
  looked up (they carry no tag of yours: a permission set's tags are not its role's), nor another account's roles.
- a bearer token (deployed, with the template's JwtIssuer or CreateUserPool: the stack's TokenApi, whose JWT
  authorizer has verified the token's signature, issuer, audience and expiry): from the claims in
  requestContext.authorizer.jwt. The claim `<JwtTenantClaim>` (default `groups`; a list, or a string of values
  separated by spaces or commas) names the tenant: a value `<JwtTenantPrefix><name>` (default
  `tickwork-tenant-<name>`) is tenant `<name>`, a name as a role's under TenantRolePrefix is (so a group and a role
  of one name are one tenant); a value `<JwtAdminGroup>` (default `tickwork-admin`) makes the caller the admin.
  Other values are not looked at. A token naming two tenants, or none while not the admin's, is refused (403). One
  naming a tenant and the admin group acts for that tenant, as the admin; the admin group's alone acts for tenant
  `jwt:<JwtAdminGroup>`.
- auth mode local (the local runtime, on 127.0.0.1): tenant `default`, an admin (open mode: whoever reaches
  127.0.0.1 runs the scheduler anyway); or, with an API keys file, the caller of the `X-Api-Key` header. The
  file is a JSON object mapping each key to a tenant name, or to `{"tenant": "<name>", "admin": true}`.
Nothing in a request's body or headers can choose the tenant, or admin rights, in iam mode, by token or not. The
mode, the token settings and the keys file are ApiSettings (tickwork.settings).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from tickwork.aws.role_tags import TENANT_TAG
from tickwork.model.audit import Actor, ActorKind, Attribution
from tickwork.model.errors import Forbidden, Unauthenticated
from tickwork.model.freezes import EVERY_TENANT
from tickwork.settings import ROLE_NAME_PART, ApiSettings
from tickwork.store import TENANT

LOCAL_TENANT = "default"
# The role Identity Center provisions in an account for a permission set, and that permission set's name.
_IDENTITY_CENTER_ROLE = re.compile(r"^AWSReservedSSO_(.+)_[0-9a-f]{16}$")


@dataclass(frozen=True)
class Caller:
    """Who is calling: its tenant (whose jobs it sees) and whether it may change tenants' settings."""

    tenant: str
    admin: bool = False

    def tenant_to_read(self, asked: str | None) -> str:
        """Whose items a read shows, for its `tenant` query parameter: the caller's own tenant (none named, or its
        own); an admin's, the tenant named, or `*` (EVERY_TENANT) for every tenant's. A tenant that names another,
        or `*`, is Forbidden, naming the parameter."""
        if asked is None or asked == self.tenant:
            return self.tenant
        if not self.admin:
            raise Forbidden(
                "`tenant`: only an admin may read another tenant's, or every tenant's (`*`); leave it out, or name "
                "your own"
            )
        return asked

    def reader_for(self, asked: str | None) -> Caller:
        """Who a read reads as, for its `tenant` (tenant_to_read): the caller (none named, its own, or an admin's
        `*`: any tenant's); an admin naming a tenant reads as that tenant, so that tenant's items alone are found."""
        scope = self.tenant_to_read(asked)
        return self if scope in (self.tenant, EVERY_TENANT) else Caller(scope)


_ARN = re.compile(r"^arn:aws[a-zA-Z-]*:(?:sts|iam)::(\d{12}):(.+)$")
# A tenant a token's claim names is a name a role could carry after TenantRolePrefix: no `:` or `/`, so it never
# passes for the tenant of an IAM principal outside the tenants' roles (`<account>:role/<name>`).
_NAMED_TENANT = re.compile(ROLE_NAME_PART, re.ASCII)
# What a display name is read from, first found first: OIDC's standard claims (Entra ID's preferred_username is the
# user's sign-in name), then Cognito's (an access token's username is a UUID where the pool signs in by e-mail).
_DISPLAY_CLAIMS = ("preferred_username", "email", "username", "cognito:username", "name")
_keys_cache: dict[str, Any] = {}


def role_name_for_tenancy(role: str) -> str:
    """The name a role counts by: its own, or, for a role Identity Center made, its permission set's."""
    provisioned = _IDENTITY_CENTER_ROLE.match(role)
    return provisioned.group(1) if provisioned else role


class RoleTags(Protocol):
    """Where a role's `tickwork:tenant` tag is read (tickwork.aws.role_tags.RoleTenantTags)."""

    def tenant_tag(self, role: str) -> str | None:
        """The tag's value, unchecked; None when the role has none. IdentityUnresolved when it cannot be read."""
        ...


def _iam_caller(event: APIGatewayProxyEventV2, settings: ApiSettings, role_tags: RoleTags) -> Caller:
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
    admin = False
    if kind == "assumed-role":
        role = rest.split("/", 1)[0]
        named = role_name_for_tenancy(role)
        # The API's own account: requestContext.accountId (read with get: the data class's property needs it).
        own_account = account == context.get("accountId")
        prefix = settings.tenant_role_prefix
        # Identity Center's roles are the permission sets' (no one may tag them); another account's are not ours.
        tagged = role_tags.tenant_tag(role) if own_account and named == role else None
        if tagged is not None:
            if not _NAMED_TENANT.match(tagged):
                raise Forbidden(
                    f"the role {role}'s tag {TENANT_TAG} is {tagged[:70]!r}, which is not a tenant name (letters, "
                    "digits and _+=,.@-, 64 at most): correct the tag"
                )
            tenant = tagged
        elif named.startswith(prefix) and own_account:
            tenant = named.removeprefix(prefix)
        else:
            tenant = f"{account}:role/{role}"
        # Only the API's own account can name who administers it: the same role name elsewhere is nobody.
        admin = named == settings.admin_role_name and own_account
    elif kind == "user":
        tenant = f"{account}:user/{rest.rsplit('/', 1)[-1]}"
    elif kind == "root" and not rest:
        tenant = f"{account}:root"
    else:
        raise Forbidden(f"callers of kind {kind!r} have no tenant; use an IAM role or user")
    if not TENANT.match(tenant):
        raise Forbidden("the caller identity does not map to a valid tenant")
    return Caller(tenant, admin)


def _jwt_claims(event: APIGatewayProxyEventV2) -> dict[str, Any] | None:
    """The verified token's claims, when a JWT authorizer admitted the request."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    jwt = authorizer.get("jwt")
    return (jwt.get("claims") or {}) if isinstance(jwt, dict) else None


def claim_values(value: Any) -> list[str]:
    """A claim's values: a list's strings, or a string's parts between spaces and commas. API Gateway's JWT
    authorizer hands a list claim (Cognito's `cognito:groups`, Okta's `groups`) to the function as one string in
    brackets, `[a b]`; IdPs that cannot issue lists write `a,b` or `a b`."""
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str) and item]
    if not isinstance(value, str):
        return []
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return [part for part in re.split(r"[\s,]+", text) if part]


def _jwt_caller(claims: dict[str, Any], settings: ApiSettings) -> Caller:
    if not settings.jwt_issuer:
        raise Unauthenticated("this stack accepts no tokens (its JwtIssuer is not set); sign requests with SigV4")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise Unauthenticated("the token has no subject (sub claim)")
    claim, prefix, admin_group = settings.jwt_tenant_claim, settings.jwt_tenant_prefix, settings.jwt_admin_group
    values = claim_values(claims.get(claim))
    admin = bool(admin_group) and admin_group in values
    tenants = sorted(
        {
            value.removeprefix(prefix)
            for value in values
            if value != admin_group and value.startswith(prefix) and _NAMED_TENANT.match(value.removeprefix(prefix))
        }
    )
    if len(tenants) > 1:
        raise Forbidden(
            f"the token names {len(tenants)} tenants in its {claim!r} claim ({', '.join(tenants[:5])}); a caller acts "
            "for one tenant: use a token whose claim names one"
        )
    if tenants:
        return Caller(tenants[0], admin)
    if admin:
        return Caller(f"jwt:{admin_group}", admin=True)
    wanted = f"{prefix}<name>" + (f" (a tenant's) or {admin_group} (the admin's)" if admin_group else "")
    raise Forbidden(f"the token names no tenant: its {claim!r} claim has no value {wanted}")


class _KeyEntry(BaseModel):
    """A key's entry in the keys file, in its object form."""

    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(pattern=TENANT.pattern)
    admin: StrictBool = False


def parse_api_keys(data: Any, source: str = "the API keys file") -> dict[str, Caller]:
    """The keys file's content (a JSON object: key -> tenant name, or key -> {"tenant": ..., "admin": ...}) as
    the caller of each key; ValueError saying what is wrong, and where, otherwise. The keys are secrets, so a
    message shows only the start of one."""
    if not isinstance(data, dict):
        raise ValueError(f"{source}: must be a JSON object mapping API keys to tenant names")
    callers: dict[str, Caller] = {}
    for key, entry in data.items():
        where = f"{source}: the entry of key {key[:4]!r}..."
        if isinstance(entry, str):
            if not TENANT.match(entry):
                raise ValueError(f"{where}: {entry[:130]!r} is not a valid tenant name ({TENANT.pattern})")
            callers[key] = Caller(entry)
            continue
        if not isinstance(entry, dict):
            raise ValueError(f'{where}: must be a tenant name or an object {{"tenant": "<name>", "admin": true}}')
        try:
            parsed = _KeyEntry.model_validate(entry)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"{where}: {problems}") from None
        callers[key] = Caller(parsed.tenant, parsed.admin)
    return callers


def _api_keys(path: str) -> dict[str, Caller]:
    """The keys file, re-read when it changes."""
    stamp = Path(path).stat().st_mtime_ns
    cached = _keys_cache.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        data = json.loads(Path(path).read_text())
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    keys = parse_api_keys(data, path)
    _keys_cache[path] = (stamp, keys)
    return keys


def _local_caller(event: APIGatewayProxyEventV2, keys_file: str | None) -> Caller:
    if not keys_file:
        return Caller(LOCAL_TENANT, admin=True)
    key = event.headers.get("x-api-key")  # the data class's headers ignore case
    if not key:
        raise Unauthenticated("send your API key in the X-Api-Key header")
    caller = _api_keys(keys_file).get(key)
    if caller is None:
        raise Unauthenticated("unknown API key")
    return caller


def caller_of(event: APIGatewayProxyEventV2, settings: ApiSettings, role_tags: RoleTags) -> Caller:
    """The caller, from the verified identity (iam: a SigV4 principal, with its role's tags, or a token's claims)
    or the local configuration; never the body."""
    if settings.auth_mode == "iam":
        claims = _jwt_claims(event)
        return _iam_caller(event, settings, role_tags) if claims is None else _jwt_caller(claims, settings)
    return _local_caller(event, settings.api_keys_file)


def attribution_of(event: APIGatewayProxyEventV2, settings: ApiSettings, role_tags: RoleTags) -> Attribution:
    """Who made the request and from where, for its audit records (docs/security.md "Audit trail"): in iam mode
    the verified principal (its ARN; shown as its role and session, or its user name), or the token's subject
    (shown as its preferred user name, e-mail, user name or name, the first it has), locally the caller's tenant
    (never its key); and API Gateway's request id, source IP and user agent."""
    caller = caller_of(event, settings, role_tags)
    claims = _jwt_claims(event) if settings.auth_mode == "iam" else None
    if claims is not None:
        subject = claims["sub"]  # caller_of checked it
        display = next((v for k in _DISPLAY_CLAIMS if isinstance(v := claims.get(k), str) and v), subject)
        actor = Actor(kind=ActorKind.JWT, id=subject[:2048], display=display[:512])
    elif settings.auth_mode == "iam":
        arn = event.request_context.authorizer.iam.user_arn
        _, resource = _ARN.match(arn).groups()  # type: ignore[union-attr]  # caller_of checked it
        kind, _, rest = resource.partition("/")
        display = {"assumed-role": rest, "user": rest.rsplit("/", 1)[-1]}.get(kind, kind)
        actor = Actor(kind=ActorKind.IAM, id=arn, display=display[:512])
    else:
        actor = Actor(kind=ActorKind.LOCAL_KEY, id=caller.tenant, display=caller.tenant)
    http = (event.get("requestContext") or {}).get("http") or {}
    return Attribution(
        actor=actor,
        request_id=(event.get("requestContext") or {}).get("requestId"),
        source_ip=http.get("sourceIp"),
        user_agent=(http.get("userAgent") or event.headers.get("user-agent") or "")[:1024] or None,
    )


def tenant_of(event: APIGatewayProxyEventV2, settings: ApiSettings, role_tags: RoleTags) -> str:
    """The caller's tenant (see caller_of)."""
    return caller_of(event, settings, role_tags).tenant
