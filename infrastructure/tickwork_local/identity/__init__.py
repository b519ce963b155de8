"""Who a local caller is: the local OIDC issuer of `tickwork dev --idp` and API Gateway's JWT authorizer, played."""
