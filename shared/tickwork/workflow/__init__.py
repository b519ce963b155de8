"""Workflows: jobs whose occurrence runs a DAG of steps, each step an ordinary run.

The pure core:
- `definition`: what a workflow is (steps, trigger rules, conditions, `$from`), and the checks a definition
  passes before anything is written;
- `expressions`: JMESPath conditions and `{"$from": ...}` values: which steps they read, and their values;
- `advance`: `plan_advance`, the pure decision of what a workflow run does next from its steps' states, and
  `workflow_status`, the run's status from them;
- `runs`: a workflow run as stored (its steps' map and the definition snapshot it runs).

On the pipeline (storage is tickwork.store.workflows):
- `factory`: a spec made into a checked Workflow (nothing written);
- `progress`: `WorkflowProgress`, opening a workflow run, recording a step's end, starting what it allows, and
  the tick's reconciliation of a stalled run;
- `occurrences`: the tick's side: a workflow's occurrences become workflow runs (tickwork.tick.dispatch claims them);
- `service`: `WorkflowService`, what the API calls.
"""
