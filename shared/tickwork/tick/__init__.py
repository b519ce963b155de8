"""The tick: every minute (and, fanned out, in its dispatch workers) it claims the due index's occurrences with
conditional writes, in a fair order between tenants and bands, and sends their runs to the band queues; it
re-sends runs whose message was lost, and opens and reconciles workflow runs."""
