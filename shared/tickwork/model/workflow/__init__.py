"""Workflows, the pure core: jobs whose occurrence runs a DAG of steps, each step an ordinary run.

- `definition`: what a workflow is (steps, trigger rules, conditions, `$from`), and the checks a definition
  passes before anything is written;
- `expressions`: JMESPath conditions and `{"$from": ...}` values: which steps they read, and their values;
- `advance`: `plan_advance`, the pure decision of what a workflow run does next from its steps' states, and
  `workflow_status`, the run's status from them;
- `compensation`: `plan_compensation`, the pure decision of which compensations a failed run starts next (saga);
- `runs`: a workflow run as stored (its steps' map and the definition snapshot it runs).
"""
