"""The model: pure values and decisions, no I/O. Ids, states, policies, the job, the run, the messages between
the tick and the executor; schedules, clocks, errors, jitter, backoff, tenants' settings; and `workflow`, the
workflow's definition, runs and DAG decisions. Nothing here imports the rest of tickwork."""
