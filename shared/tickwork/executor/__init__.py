"""The executor: it takes a band queue's run messages, leases each run, passes the admission gates (attempts,
breaker, overlap, limits), runs the job type's handler under a heartbeat, and records the outcome (retry, defer,
settle, dead letter), emitting the run's metrics."""
