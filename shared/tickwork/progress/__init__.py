"""What moves a job or a workflow on once its runs move, shared by the tick, the executor and the API: a workflow
run's progress (opening it, recording a step's end, starting what that allows, reconciling a stalled one) and a
job's completion once every run of its occurrences has settled. Imports the store and aws, never the stages
that call it."""
