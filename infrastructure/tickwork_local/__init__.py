"""The local stand-ins for the infrastructure: moto, the Lambda runtime, event sources and `tickwork dev`.

Its rooms: `aws/` (AWS, played on moto), `runtime/` (the functions run as Lambda runs them, and what invokes them),
`identity/` (the local IdP and the JWT authorizer), `stack/` (template.yaml read, rendered and built) and
`generate/` (the committed files generated from the code). `cli.py` is `tickwork dev` itself.
"""
