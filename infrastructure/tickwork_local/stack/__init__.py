"""The stack's template.yaml: read into plain dicts, rendered with other parameter values, and built as `sam build`
lays it out."""
