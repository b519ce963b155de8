"""AWS, played locally on moto: the moto server and what makes it behave as AWS does, the stack's resources
provisioned from template.yaml, CloudWatch's metrics from the functions' EMF, local secrets and injected AWS faults.

This `__init__` imports nothing: `tickwork dev`'s own process takes `endpoint`, `provision` and `emf_forwarding` from
here and never imports moto, which only the moto server's child process and the in-process tests load.
"""
